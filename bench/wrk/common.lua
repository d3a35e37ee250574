-- Shared by every scenario script (loaded with dofile from BENCH_WRK_DIR).
-- The token comes from BENCH_TOKEN (run.sh gets it from POST /token first).
-- done() prints one machine-readable line, "BENCH {json}", for report.py.

token = os.getenv("BENCH_TOKEN") or ""
threads_total = tonumber(os.getenv("BENCH_THREADS") or "1")
id_count = tonumber(os.getenv("BENCH_IDS") or "100")

auth_headers = { ["Authorization"] = token }
json_headers = { ["Authorization"] = token, ["Content-Type"] = "application/json" }

local thread_list = {}
local thread_index = 0

-- Each thread gets an index (tid, 0-based) and its own random seed.
function bench_setup(thread)
   thread:set("tid", thread_index)
   thread_list[#thread_list + 1] = thread
   thread_index = thread_index + 1
end

function bench_init()
   math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
end

function bench_threads()
   return thread_list
end

function bench_done(summary, latency, requests, extra)
   local e = summary.errors
   local seconds = summary.duration / 1e6
   io.write(string.format(
      'BENCH {"requests":%d,"duration_s":%.6f,"rps":%.2f,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
      '"max_us":%d,"mean_us":%.1f,"bytes":%d,"err_connect":%d,"err_read":%d,"err_write":%d,' ..
      '"err_status":%d,"err_timeout":%d%s}\n',
      summary.requests, seconds, summary.requests / seconds,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.max, latency.mean, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout, extra or ""))
end

function random_id()
   return math.random(1, id_count)
end
