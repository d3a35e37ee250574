-- POST /token with the configured credentials, each request from a client of
-- its own: the server runs with TRUSTED_PROXY_HOPS=1, and X-Forwarded-For
-- names a new address per request (10.T.x.y, T the wrk thread), as logins of
-- many users behind one proxy arrive. (From one address at once, logins past
-- the failed-login limit that are still being checked answer 429: see the
-- README's "Login protection".)
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
local body = string.format('{"username":"%s","password":"%s"}',
   os.getenv("BENCH_USER") or "admin", os.getenv("BENCH_PASS") or "password")
local sent = 0
setup = bench_setup
init = bench_init
request = function()
   sent = sent + 1
   local client = string.format("10.%d.%d.%d", (tid or 0) % 256, math.floor(sent / 256) % 256,
      sent % 256)
   return wrk.format("POST", "/token",
      { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = client }, body)
end
done = bench_done
