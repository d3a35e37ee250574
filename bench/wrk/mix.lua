-- 80 % reads, 20 % writes: GET /book/{id} 80 %, PUT /book/{id} 10 %,
-- POST /book 10 %; ids drawn from 1..BENCH_IDS (all exist, never deleted).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
local post_body = '{"title":"Benchmark book","author":"Load Generator","year":2024}'
local put_body = '{"title":"Updated title","year":2025}'
setup = bench_setup
init = bench_init
request = function()
   local r = math.random(1, 10)
   if r <= 8 then
      return wrk.format("GET", "/book/" .. random_id(), auth_headers)
   elseif r == 9 then
      return wrk.format("PUT", "/book/" .. random_id(), json_headers, put_body)
   else
      return wrk.format("POST", "/book", json_headers, post_body)
   end
end
done = bench_done
