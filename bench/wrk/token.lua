-- POST /token with the configured credentials.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
wrk.method = "POST"
wrk.path = "/token"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format('{"username":"%s","password":"%s"}',
   os.getenv("BENCH_USER") or "admin", os.getenv("BENCH_PASS") or "password")
setup = bench_setup
done = bench_done
