"""The PostgreSQL databases the benchmarks fill: each script drops the one it is given and creates it again.

With H2E_BENCH_TEMPLATE_DB set to a migrated database (tests/test_benchmarks_smoke.py does, so that its
tiny runs share one migration), the new database is a copy of it and needs no migrating.
"""

from __future__ import annotations

import os
import subprocess

TEMPLATE_ENV = "H2E_BENCH_TEMPLATE_DB"


def _pg(*command: str) -> None:
    subprocess.run([command[0], "-h", "127.0.0.1", "-U", "postgres", *command[1:]], check=True)


def fresh_database(db: str) -> bool:
    """Drop `db` and create it empty, or as a copy of the migrated template; True when it needs migrating."""
    template = os.environ.get(TEMPLATE_ENV, "")
    _pg("dropdb", "--if-exists", db)
    _pg("createdb", *(["--template", template] if template else []), db)
    return not template
