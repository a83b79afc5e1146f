# SPDX-License-Identifier: Apache-2.0
# Hostile HTTP clients against an exporter started with --web.connection-timeout=2 and
# --web.max-connections-per-ip=4: a 20 KiB header, a 20 KiB URI, an idle connection, a
# half-sent request, and a client that holds its four connections with half-sent requests
# while another address scrapes. One line per case, "NAME RESULT". Usage: http_limits.py PORT
import socket, sys, time
port = int(sys.argv[1])

def conn(src="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=10)
    return s

def read_all(s):
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError as e:
        out += b"<" + str(e).encode() + b">"
    return out

def status(resp):
    return resp.split(b"\r\n", 1)[0].decode(errors="replace")

s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\nConnection: close\r\n\r\n")
print("big-header", status(read_all(s)))
s = conn()
s.sendall(b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
print("long-uri", status(read_all(s)))

# idle and slow clients are cut after the connection timeout (2 s)
t = time.time()
s = conn()
print("idle-closed", read_all(s) == b"", round(time.time() - t))
t = time.time()
s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\nHo")
print("partial-closed", read_all(s) == b"", round(time.time() - t))

# a client that holds 4 connections (its per-address limit) with half-sent requests:
# a fifth from it is refused, and a scrape from another address is answered at once
hogs = []
for i in range(4):
    h = conn("127.0.0.2")
    h.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    hogs.append(h)
time.sleep(0.3)
extra = conn("127.0.0.2")
extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
r = read_all(extra)
print("fifth-from-hog", "answered" if r.startswith(b"HTTP/") else "refused")
t = time.time()
s = conn("127.0.0.1")
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
r = read_all(s)
print("other-address", status(r), time.time() - t < 1.5)
for h in hogs:
    h.close()
