-- GET /books (the whole catalogue; run.sh seeds 100, 1,000 or 10,000 books).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
wrk.method = "GET"
wrk.path = "/books"
wrk.headers["Authorization"] = token
setup = bench_setup
done = bench_done
