#!/usr/bin/env python3
"""HTTP clients for load tests of the executor's API, on kept-alive connections (a process per
request would make the harness the load): api_load.py PORT MODE ARGS...

  submit WORKER SECONDS   core.noop pinned to WORKER, at 10/s on a fixed schedule, for SECONDS
                          (a slot missed is not made up); prints each new id (exit 1 on an
                          answer other than 201)
  read KIND SECONDS       GET /api/v1/dead-letters/stats (KIND stats) or ?q= searches of random
                          words (KIND searches) back to back for SECONDS; prints {"status": count}
  livez SECONDS           GET /livez on a new connection every 100 ms for SECONDS; prints each
                          answer's time in ms (5000 for none within 5 s, or not 200)
"""
import http.client
import json
import random
import sys
import time

HOST = "127.0.0.1"


def connect(port, timeout=10):
    return http.client.HTTPConnection(HOST, port, timeout=timeout)


def submit(port, worker, seconds):
    conn = connect(port)
    body = json.dumps({"action_ref": "core.noop", "worker": worker})
    t0 = time.monotonic()
    i = 0
    while i / 10.0 < seconds and time.monotonic() < t0 + seconds:
        due = t0 + i / 10.0
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        conn.request("POST", "/api/v1/executions", body=body,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        answer = r.read()
        if r.status != 201:
            sys.stderr.write("submit answered %d: %s\n" % (r.status, answer[:300]))
            return 1
        print(json.loads(answer)["id"], flush=True)
        i += 1
    return 0


def read(port, kind, seconds):
    conn = connect(port)
    counts = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if kind == "stats":
            path = "/api/v1/dead-letters/stats"
        else:
            path = "/api/v1/dead-letters?q=%04x&limit=100" % random.randrange(65536)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            code = r.status
        except (OSError, http.client.HTTPException):
            code = 0
            conn.close()
            conn = connect(port)
        counts[str(code)] = counts.get(str(code), 0) + 1
    print(json.dumps(counts))
    return 0


def livez(port, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        ms = 5000
        try:
            conn = connect(port, timeout=5)
            conn.request("GET", "/livez")
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                ms = int((time.monotonic() - t0) * 1000)
            conn.close()
        except (OSError, http.client.HTTPException):
            pass
        print(ms, flush=True)
        left = 0.1 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
    return 0


def main(argv):
    port, mode = int(argv[1]), argv[2]
    if mode == "submit":
        return submit(port, argv[3], float(argv[4]))
    if mode == "read":
        return read(port, argv[3], float(argv[4]))
    if mode == "livez":
        return livez(port, float(argv[3]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
