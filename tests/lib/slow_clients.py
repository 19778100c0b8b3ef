#!/usr/bin/env python3
"""Slow clients against HTTP ports while /livez is probed (tests/integration/health_slow_clients.sh).

  slow_clients.py SECONDS PROBE_MS HOST:PORT:N [HOST:PORT:N ...]

Holds N sockets against each port for SECONDS: each sends half a request line and then idles;
one the server closes is opened again half a second later, so the pressure lasts. Meanwhile,
every PROBE_MS, each port gets a `GET /livez` on a new connection, timed from connect to the
whole answer. Prints one line per port:
  PORT probes=P over_100ms=O max_ms=M p50_ms=X failed=F reopened=R held_at_end=H
where failed counts probes without a 200 within 2 s and held_at_end the slow sockets still open.
"""
import select
import socket
import sys
import time

HALF = b"GET /api/v1/exec"
PROBE = b"GET /livez HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"


class Port:
    def __init__(self, spec):
        host, port, n = spec.rsplit(":", 2)
        self.addr, self.n = (host, int(port)), int(n)
        self.socks, self.reopen_at, self.reopened = {}, [], 0
        self.times, self.failed = [], 0

    def open_one(self):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(self.addr)
        except BlockingIOError:
            pass
        self.socks[s.fileno()] = [s, False]  # sent the half line yet

    def probe(self):
        start = time.monotonic()
        try:
            s = socket.create_connection(self.addr, timeout=2)
            s.sendall(PROBE)
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            s.close()
            ok = data.startswith(b"HTTP/1.1 200")
        except OSError:
            ok = False
        took = (time.monotonic() - start) * 1000
        if ok:
            self.times.append(took)
        else:
            self.failed += 1


def main():
    seconds, probe_ms = float(sys.argv[1]), float(sys.argv[2])
    ports = [Port(a) for a in sys.argv[3:]]
    for p in ports:
        for _ in range(p.n):
            p.open_one()
    end = time.monotonic() + seconds
    next_probe = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_probe:
            for p in ports:
                p.probe()
            next_probe = now + probe_ms / 1000
        for p in ports:
            due = [t for t in p.reopen_at if t <= now]
            p.reopen_at = [t for t in p.reopen_at if t > now]
            for _ in due:
                p.open_one()
                p.reopened += 1
        fds = {fd: (p, e) for p in ports for fd, e in p.socks.items()}
        poller = select.poll()  # select() stops at descriptor 1023
        for fd, (_, e) in fds.items():
            poller.register(fd, select.POLLIN if e[1] else select.POLLOUT)
        wait_ms = max(0.0, min(0.05, next_probe - time.monotonic())) * 1000
        for fd, ev in poller.poll(wait_ms):
            p, e = fds[fd]
            s = e[0]
            if not e[1] and ev & select.POLLOUT:
                try:
                    s.send(HALF)
                    e[1] = True
                except OSError:
                    close(p, s, now)
                continue
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if not got:
                close(p, s, now)
    for p in ports:
        t = sorted(p.times)
        print("%d probes=%d over_100ms=%d max_ms=%.1f p50_ms=%.1f failed=%d reopened=%d held_at_end=%d" % (
            p.addr[1], len(t), sum(1 for x in t if x > 100), t[-1] if t else -1,
            t[len(t) // 2] if t else -1, p.failed, p.reopened, len(p.socks)))


def close(p, s, now):
    p.socks.pop(s.fileno(), None)
    s.close()
    p.reopen_at.append(now + 0.5)


if __name__ == "__main__":
    main()
