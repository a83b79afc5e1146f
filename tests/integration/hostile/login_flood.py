# SPDX-License-Identifier: Apache-2.0
# Failed logins against one that must keep working: ATTACKERS keep-alive connections from
# ATTACKER_ADDR (an IPv4 or IPv6 loopback address: each connects to 127.0.0.1 or ::1) send GET /metrics with basic auth as USER and a new random password each time,
# as fast as they are answered; one second in, a scraper from GOOD_ADDR sends the right
# password every 0.5 s for GOOD_PATH (keep-alive, as Prometheus) until SECONDS have passed. Prints
#   good 200=N 429=N ... attacker 401=N 429=N ...
# each side's status counts (0: no answer).
# Usage: login_flood.py PORT USER PASSWORD GOOD_ADDR ATTACKER_ADDR ATTACKERS SECONDS GOOD_PATH
import base64, collections, http.client, os, sys, threading, time

port, (user, password, good_addr, bad_addr) = int(sys.argv[1]), sys.argv[2:6]
attackers, seconds, good_path = int(sys.argv[6]), float(sys.argv[7]), sys.argv[8]
end = time.monotonic() + 1 + seconds
good, bad, lock = collections.Counter(), collections.Counter(), threading.Lock()


def auth(pw):
    return "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def get(conn, src, pw, path="/metrics"):
    """One request on conn (None: a new one); the connection to use next and the status."""
    try:
        if conn is None:
            host = "::1" if ":" in src else "127.0.0.1"
            conn = http.client.HTTPConnection(host, port, timeout=10, source_address=(src, 0))
        conn.request("GET", path, headers={"Authorization": auth(pw)})
        resp = conn.getresponse()
        resp.read()
        if resp.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
        return conn, resp.status
    except (OSError, http.client.HTTPException):
        if conn is not None:
            conn.close()
        return None, 0


def attacker():
    conn = None
    while time.monotonic() < end:
        conn, status = get(conn, bad_addr, os.urandom(12).hex())
        with lock:
            bad[status] += 1
        if status == 0:
            time.sleep(0.05)


def scraper():
    conn = None
    time.sleep(1)
    while time.monotonic() < end:
        t = time.monotonic()
        conn, status = get(conn, good_addr, password, good_path)
        good[status] += 1
        time.sleep(max(0, 0.5 - (time.monotonic() - t)))


threads = [threading.Thread(target=attacker) for _ in range(attackers)]
threads.append(threading.Thread(target=scraper))
for t in threads:
    t.start()
for t in threads:
    t.join()
print("good", " ".join("%d=%d" % kv for kv in sorted(good.items())),
      "attacker", " ".join("%d=%d" % kv for kv in sorted(bad.items())))
