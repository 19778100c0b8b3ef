#!/usr/bin/env python3
"""Raw HTTP/1.1 requests for the tests of hostile clients (what curl will not send).

  http_raw.py PORT ask NAME REQUEST_PY_LITERAL  -> one request's bytes (a Python bytes literal),
      prints "CODE SECONDS BODY": the status, the time to it, the body on one line; "closed" as
      CODE when the server closes without an answer. NAME is for the reader of the test.
  http_raw.py PORT flood N SIZE KEYHEADER       -> N connections, each sends a head for a body of
      SIZE bytes and then all but its last byte as fast as the server reads; prints one line per
      connection: "CODE SENT" (bytes of body sent before the answer or the close).
  http_raw.py PORT slow N SECONDS               -> N connections each send half a request line,
      then idle; prints how many the server closed within SECONDS, and when the last closed.
"""
import ast
import json
import select
import socket
import sys
import time


def read_answer(s, deadline):
    data = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            if len(body) >= length:
                return head, body[:length]
    return None, data


def ask(port, name, literal):
    req = ast.literal_eval(literal)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    start = time.monotonic()
    try:
        s.sendall(req)
    except OSError:
        pass  # the server may answer and close while the request is still being sent
    head, body = read_answer(s, start + 10)
    took = time.monotonic() - start
    if head is None:
        print("closed %.3f -" % took)
        return
    code = head.split(b" ", 2)[1].decode()
    print("%s %.3f %s" % (code, took, body.decode("utf-8", "replace").replace("\n", " ")))


def flood(port, n, size, keyheader):
    head = ("POST /api/v1/executions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "%sContent-Length: %d\r\n\r\n" % (keyheader + "\r\n" if keyheader else "", size)).encode()
    chunk = b"z" * 65536
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(head)
        s.setblocking(False)
        conns.append({"s": s, "sent": 0, "data": b"", "done": False})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(c["done"] for c in conns):
        live = [c for c in conns if not c["done"]]
        writers = [c["s"] for c in live if c["sent"] < size - 1]
        r, w, _ = select.select([c["s"] for c in live], writers, [], 1.0)
        for c in live:
            if c["s"] in r:
                try:
                    got = c["s"].recv(65536)
                except OSError:
                    got = b""
                c["data"] += got
                if not got or b"\r\n\r\n" in c["data"]:
                    c["done"] = True
            if c["s"] in w and not c["done"]:
                try:
                    c["sent"] += c["s"].send(chunk[: size - 1 - c["sent"]])
                except BlockingIOError:
                    pass
                except OSError:
                    c["done"] = True
    for c in conns:
        line = c["data"].split(b"\r\n", 1)[0].split(b" ")
        code = line[1].decode() if len(line) > 1 else "closed"
        body = c["data"].partition(b"\r\n\r\n")[2]
        try:
            err = json.loads(body)["error"]
        except Exception:
            err = "-"
        print("%s %s %d" % (code, err, c["sent"]))
        c["s"].close()


def slow(port, n, seconds):
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /api/v1/wor")
        conns.append(s)
    start = time.monotonic()
    open_ = set(conns)
    last = 0.0
    while open_ and time.monotonic() - start < seconds:
        r, _, _ = select.select(list(open_), [], [], 0.5)
        for s in r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if not got:
                open_.discard(s)
                last = time.monotonic() - start
    print("%d %.1f" % (n - len(open_), last))
    for s in conns:
        s.close()


if __name__ == "__main__":
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "ask":
        ask(port, sys.argv[3], sys.argv[4])
    elif mode == "flood":
        flood(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif mode == "slow":
        slow(port, int(sys.argv[3]), float(sys.argv[4]))
