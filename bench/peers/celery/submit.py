"""Submit N bench.noop tasks and wait until the last result is stored in PostgreSQL.

Prints one key=value line: per_s is N / (the last result's date_done - the first submit).
"""
import argparse
import sys
import time

import psycopg2

from benchapp import app, noop


def stored(cur):
    cur.execute("SELECT count(*), extract(epoch FROM max(date_done)) FROM celery_taskmeta"
                " WHERE status = 'SUCCESS'")
    return cur.fetchone()


def wait_stored(cur, want, timeout_s):
    deadline = time.time() + timeout_s
    while True:
        try:
            count, last = stored(cur)
        except psycopg2.errors.UndefinedTable:  # the backend creates it with the first result
            cur.connection.rollback()
            count, last = 0, None
        if count >= want:
            return last
        if time.time() > deadline:
            sys.exit(f"celery: only {count} of {want} results stored after {timeout_s}s")
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--dsn", required=True, help="libpq URL of the result database")
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args()
    db = psycopg2.connect(a.dsn)
    db.autocommit = True
    cur = db.cursor()
    # Warm-up: the worker is consuming, both pool processes have run a task and hold a database
    # connection, and the result table exists.
    for _ in range(a.warmup):
        noop.apply_async()
    wait_stored(cur, a.warmup, a.timeout)
    t0 = time.time()
    for _ in range(a.n):
        noop.apply_async()
    submitted = time.time() - t0
    # date_done is a naive UTC datetime (datetime.utcnow() in the worker): epoch seconds as is.
    last = wait_stored(cur, a.warmup + a.n, a.timeout)
    total = float(last) - t0
    print(f"celery n={a.n} processes=2 submit_s={submitted:.3f} total_s={total:.3f}"
          f" per_s={a.n / total:.0f}")


def delete_queue():
    """After the worker stopped: its queue and exchange, and celery.pidbox unless in use."""
    name = app.conf.task_default_queue
    with app.connection_for_write() as conn:
        ch = conn.default_channel
        ch.queue_delete(name)
        ch.exchange_delete(name)
        try:
            ch.exchange_delete("celery.pidbox", if_unused=True)
        except Exception:  # in use by another Celery on this vhost: leave it
            pass


if __name__ == "__main__":
    if sys.argv[1:] == ["--delete-queue"]:
        delete_queue()
    else:
        main()
