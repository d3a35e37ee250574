-- POST /book: a new book per request.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
wrk.method = "POST"
wrk.path = "/book"
wrk.headers["Authorization"] = token
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"Benchmark book","author":"Load Generator","year":2024}'
setup = bench_setup
done = bench_done
