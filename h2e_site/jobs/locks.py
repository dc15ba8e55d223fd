"""One runner per job: a PostgreSQL session advisory lock on the job's pk.

The lock dies with the worker's database connection, which is how a starting worker tells a RUNNING job whose
worker died (nobody holds its lock) from one still running elsewhere. SQLite, the one-worker laptop setup, has
no such lock: there it is always granted, and a starting worker resumes every RUNNING job.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

ADVISORY_LOCK_CLASS = 0x48_32_45  # "H2E": first key of the two-int advisory lock, the job pk the second


@contextmanager
def job_lock(job_pk: int) -> Iterator[bool]:
    """Try to take the job's lock; yields whether it is held (then released on exit)."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [ADVISORY_LOCK_CLASS, job_pk])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [ADVISORY_LOCK_CLASS, job_pk])
