# SPDX-License-Identifier: Apache-2.0
# 500 slow clients from 125 loopback addresses (4 each), each with half a request, then one
# scrape from 127.0.0.1 and one from 127.0.0.6 (one of theirs). Prints "held N" and, per
# scrape, "scrape ADDRESS STATUS_LINE SECONDS" (the status line's spaces as _).
# Usage: slow_clients.py PORT
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(500):
    src = "127.0.0.%d" % (2 + i % 125)
    try:
        s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        held.append(s)
    except OSError:
        pass
print("held", len(held))
time.sleep(0.5)
for src in ("127.0.0.1", "127.0.0.6"):
    t = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        status = data.split(b"\r\n", 1)[0].decode()
    except OSError as e:
        status = "error " + str(e)
    print("scrape", src, status.replace(" ", "_"), "%.2f" % (time.time() - t))
for s in held:
    s.close()
