# SPDX-License-Identifier: Apache-2.0
# 8 simultaneous scrapes of /metrics (a barrier lets them go at once); prints their status codes
# sorted, a 503 without Retry-After as -503 and a scrape that failed otherwise as 0.
# Usage: burst.py PORT
import sys, threading, urllib.request, urllib.error
port, codes, gate = int(sys.argv[1]), [], threading.Barrier(8)
def one():
    gate.wait()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as r:
            codes.append(r.status)
    except urllib.error.HTTPError as e:
        codes.append(e.code if e.headers.get("Retry-After") else -e.code)
    except Exception:
        codes.append(0)
ts = [threading.Thread(target=one) for _ in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print(" ".join(str(c) for c in sorted(codes)))
