# SPDX-License-Identifier: Apache-2.0
# 1000 scrapes of /metrics over one keep-alive connection; prints how many were answered 200 and
# the seconds they took. Usage: scrape_loop.py PORT
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
ok, t = 0, time.time()
for _ in range(1000):
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    ok += r.status == 200
print(ok, round(time.time() - t, 1))
