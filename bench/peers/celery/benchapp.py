"""The Celery peer of warren's (b): a no-op task, acks_late, results in PostgreSQL.

Configured from the environment by bench/peers/celery/run (README.md beside this file).
"""
import os

from celery import Celery

app = Celery(
    "benchapp",
    broker=os.environ["BENCH_CELERY_BROKER"],
    backend=os.environ["BENCH_CELERY_BACKEND"],
)
app.conf.update(
    task_default_queue=os.environ["BENCH_CELERY_QUEUE"],
    # Ack after the task ran, as warren's workers do after their report is confirmed.
    task_acks_late=True,
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    # Everything else is Celery's default: prefork pool, prefetch multiplier 4, persistent
    # task messages on a durable queue, no publisher confirms.
)


@app.task(name="bench.noop")
def noop():
    return None
