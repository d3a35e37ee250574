-- Every benchmark scenario for wrk (bench/README.md says what each does),
-- picked by BENCH_SCENARIO; bench/run.py sets the rest: BENCH_TOKEN, the
-- login's BENCH_USER and BENCH_PASS, BENCH_IDS (GET and PUT pick ids at
-- random in 1..BENCH_IDS), BENCH_NONCE (in each Idempotency-Key),
-- BENCH_DELETE_FIRST and BENCH_DELETE_COUNT (the seeded books that delete,
-- putwalk and putif walk, a slice per thread; past its end, /book/0, a 404),
-- BENCH_PAGE_AFTER. `list` is GET /books, `page` GET /books?limit=100.
-- done() prints one line "BENCH {json}" with wrk's exact figures; "errors"
-- counts failed connections, reads, writes, timeouts and answers of status
-- 400 or more, "non2xx" those answers alone (a 503 is one).
local scenario = os.getenv("BENCH_SCENARIO") or "get"
local token = os.getenv("BENCH_TOKEN") or ""
local ids = tonumber(os.getenv("BENCH_IDS") or "100")
local threads = tonumber(os.getenv("BENCH_THREADS") or "1")
local first = tonumber(os.getenv("BENCH_DELETE_FIRST") or "1")
local count = tonumber(os.getenv("BENCH_DELETE_COUNT") or "0")
local after = os.getenv("BENCH_PAGE_AFTER") or ""
local nonce = os.getenv("BENCH_NONCE") or ""
local auth = { ["Authorization"] = token }
local json = { ["Authorization"] = token, ["Content-Type"] = "application/json" }
local new_book = '{"title":"Benchmark book","author":"Load Generator","year":2024}'
local update = '{"title":"Updated title","year":2025}'
local login = string.format('{"username":"%s","password":"%s"}',
   os.getenv("BENCH_USER") or "", os.getenv("BENCH_PASS") or "")
local started = 0

function setup(thread)
   thread:set("tid", started)
   started = started + 1
end

function init()
   math.randomseed(os.time() * 1000 + tid * 7919)
   sent = 0
   next_id = first + tid * math.floor(count / threads)
   last_id = next_id + math.floor(count / threads) - 1
end

local function book() return "/book/" .. math.random(1, ids) end

function request()
   sent = sent + 1
   if scenario == "token" then
      local client = string.format("10.%d.%d.%d", tid % 256, math.floor(sent / 256) % 256, sent % 256)
      return wrk.format("POST", "/token",
         { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = client }, login)
   elseif scenario == "post" then
      return wrk.format("POST", "/book", json, new_book)
   elseif scenario == "postkey" then
      local keyed = { ["Authorization"] = token, ["Content-Type"] = "application/json",
                      ["Idempotency-Key"] = string.format("bench-%s-%d-%d", nonce, tid, sent) }
      return wrk.format("POST", "/book", keyed, new_book)
   elseif scenario == "put" then
      return wrk.format("PUT", book(), json, update)
   elseif scenario == "delete" or scenario == "putwalk" or scenario == "putif" then
      local id = next_id <= last_id and next_id or 0
      next_id = next_id + 1
      if scenario == "delete" then return wrk.format("DELETE", "/book/" .. id, auth) end
      local headers = { ["Authorization"] = token, ["Content-Type"] = "application/json" }
      if scenario == "putif" then headers["If-Match"] = string.format('"%d.1"', id) end
      return wrk.format("PUT", "/book/" .. id, headers, update)
   elseif scenario == "mix" then
      local r = math.random(1, 10)
      if r == 9 then return wrk.format("PUT", book(), json, update) end
      if r == 10 then return wrk.format("POST", "/book", json, new_book) end
      return wrk.format("GET", book(), auth)
   elseif scenario == "list" then
      return wrk.format("GET", "/books", auth)
   elseif scenario == "page" then
      return wrk.format("GET", "/books?limit=100" .. (after ~= "" and "&after=" .. after or ""), auth)
   end
   return wrk.format("GET", book(), auth)
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'BENCH {"requests":%d,"rps":%.2f,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}\n',
      summary.requests, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99),
      e.connect + e.read + e.write + e.status + e.timeout, e.status))
end
