-- GET /books?limit=100 (a catalog page, with a Link to the next one); with
-- BENCH_PAGE_AFTER set, the page after that id (`after` near the end of the
-- 10,000 seeded books: the keyset page must cost what the first one does).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
local after = os.getenv("BENCH_PAGE_AFTER")
wrk.method = "GET"
wrk.path = "/books?limit=100"
if after and after ~= "" then
   wrk.path = wrk.path .. "&after=" .. after
end
wrk.headers["Authorization"] = token
setup = bench_setup
done = bench_done
