-- PUT /book/{id}: two fields of a random existing book (1..BENCH_IDS).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
local body = '{"title":"Updated title","year":2025}'
setup = bench_setup
init = bench_init
request = function()
   return wrk.format("PUT", "/book/" .. random_id(), json_headers, body)
end
done = bench_done
