"""gunicorn in a subprocess on a free loopback port, pointed at the test database (as tests/worker_process)

httpx2 is the HTTP client the openai package depends on (httpx's API)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Gunicorn:
    def __init__(self, env: dict[str, str], *, workers: int = 4) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "h2e_site.wsgi:application",
                "--workers", str(workers), "--bind", f"127.0.0.1:{self.port}", "--access-logfile", "-",
            ],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_until_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"gunicorn exited with {self.process.returncode}:\n{self.log}")
            try:
                httpx.get(f"{self.url}/a/no-such-study/", timeout=2)
                if self.log.count("Booting worker") >= 1:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        pytest.fail(f"gunicorn was not ready after {timeout} s:\n{self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
