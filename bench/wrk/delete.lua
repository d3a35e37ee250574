-- DELETE /book/{id}: every request deletes a different existing book.
-- run.sh seeds BENCH_DELETE_COUNT books from id BENCH_DELETE_FIRST on; each
-- of the BENCH_THREADS threads walks its own slice with a counter. Past the
-- end of its slice a thread asks for /book/0, which never exists: those
-- 404s show in wrk's non-2xx count and as "exhausted" in the BENCH line.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
local first = tonumber(os.getenv("BENCH_DELETE_FIRST") or "1")
local count = tonumber(os.getenv("BENCH_DELETE_COUNT") or "0")
local per_thread = math.floor(count / threads_total)

setup = bench_setup

init = function()
   next_id = first + tid * per_thread
   last_id = next_id + per_thread - 1
   exhausted = 0
end

request = function()
   local id = next_id
   if id > last_id then
      exhausted = exhausted + 1
      id = 0
   else
      next_id = id + 1
   end
   return wrk.format("DELETE", "/book/" .. id, auth_headers)
end

done = function(summary, latency, requests)
   local total = 0
   for _, thread in ipairs(bench_threads()) do
      total = total + (thread:get("exhausted") or 0)
   end
   bench_done(summary, latency, requests, string.format(',"exhausted":%d', total))
end
