-- GET /book/{id}, id drawn at random from 1..BENCH_IDS (all exist).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
setup = bench_setup
init = bench_init
request = function()
   return wrk.format("GET", "/book/" .. random_id(), auth_headers)
end
done = bench_done
