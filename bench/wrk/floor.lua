-- The floor component: GET / (it answers every request the same way).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
wrk.method = "GET"
wrk.path = "/"
wrk.headers["Authorization"] = token
setup = bench_setup
done = bench_done
