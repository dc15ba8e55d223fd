"""Real Celery worker processes for tests, pointed at pytest-django's test database through the environment.

    env = process_env(redis_url=os.environ["REDIS_URL"], var_dir=tmp_path)
    worker = Worker(env); worker.wait_until_ready(); ...; worker.stop()   # or worker.kill() (SIGKILL)

The worker runs in its own process group so a test can SIGKILL it with its pool children, like a machine
losing power. Rows the worker must see have to be committed: use django_db(transaction=True).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_SECONDS = 60
WORKER_OPTIONS = ["-Q", "default", "--concurrency", "1", "--without-mingle", "--without-gossip", "-l", "INFO"]


def worker_database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("a worker process needs a shared database: set DATABASE_URL to PostgreSQL")
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    port = db["PORT"] or "5432"
    return f"postgres://{credentials}@{host}:{port}/{db['NAME']}"


def process_env(*, redis_url: str | None, var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a worker (or a manage.py command) using the test database."""
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "DATABASE_URL"}}
    env.update(DEBUG="1", DATABASE_URL=worker_database_url(), H2E_VAR_DIR=str(var_dir), **extra)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


class Worker:
    """`celery -A h2e_site worker` in a subprocess; its log is collected so a failure can show it."""

    def __init__(self, env: dict[str, str], options: list[str] | None = None) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "h2e_site", "worker", *(options or WORKER_OPTIONS)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: kill() takes the pool children with it
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if " ready." in self.log:
                return
            if self.process.poll() is not None:
                pytest.fail(f"the worker exited with {self.process.returncode}:\n{self.log}")
            time.sleep(0.2)
        pytest.fail(f"the worker was not ready after {READY_TIMEOUT_SECONDS} s:\n{self.log}")

    def assert_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the worker died with {self.process.returncode}:\n{self.log}")

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once: no shutdown, no ack, no cleanup."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
