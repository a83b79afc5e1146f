# SPDX-License-Identifier: Apache-2.0
# Against an exporter started with --web.max-connections=3: holds three connections, tries a
# fourth ("fourth answered|refused"), closes the three and scrapes until one is answered
# ("after STATUS LINE"). Usage: max_connections.py PORT
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
try:
    r = s.recv(64)
except OSError:
    r = b""
print("fourth", "answered" if r.startswith(b"HTTP/") else "refused")
for h in held:
    h.close()
status = ""
for _ in range(50):  # the server notices the closes within moments
    time.sleep(0.1)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    try:
        status = s.recv(64).split(b"\r\n", 1)[0].decode()
    except OSError:
        status = ""
    if status:
        break
print("after", status)
