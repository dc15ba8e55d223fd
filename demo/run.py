"""Run the web app and a Celery worker together; stop both on Ctrl-C (or when either one exits).

    python demo/run.py [--host 127.0.0.1] [--port 8000]

`make demo` calls this after `manage.py demo_setup`. Children inherit the environment (DEBUG=1 and the
embedded SQLite database and broker under var/, unless H2E_VAR_DIR says otherwise).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE_SECONDS = 15
READY_TIMEOUT_SECONDS = 60


def web_command(host: str, port: int) -> list[str]:
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "gunicorn", "h2e_site.wsgi", "--bind", bind, "--workers", "2"]


def worker_command() -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "h2e_site", "worker", "-Q", "default", "--concurrency", "1",
        "--without-mingle", "--without-gossip", "--loglevel", "INFO",
    ]  # fmt: skip


def demo_login() -> str:
    var_dir = Path(os.environ.get("H2E_VAR_DIR", str(ROOT / "var")))
    path = var_dir / "demo-login.txt"
    if not path.exists():
        return f"(no {path}: run `python manage.py demo_setup` first)"
    fields = dict(line.split(":", 1) for line in path.read_text(encoding="utf-8").splitlines() if ":" in line)
    return f"{fields.get('username', '?').strip()} / {fields.get('password', '?').strip()}"


def wait_until_serving(url: str, processes: list[subprocess.Popen[bytes]]) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # the server answered: it is up
        except OSError:
            time.sleep(0.3)
    return False


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the demo web app and worker together.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    processes = [
        subprocess.Popen(web_command(args.host, args.port), cwd=ROOT),
        subprocess.Popen(worker_command(), cwd=ROOT),
    ]
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{url_host}:{args.port}/"
    try:
        if not wait_until_serving(url, processes):
            print(f"The web app did not come up at {url}; stopping.", file=sys.stderr, flush=True)
            return 1
        print(
            f"\n  How2Everything Studio demo: {url}\n  Staff login: {demo_login()}\n  Ctrl-C stops.\n",
            flush=True,
        )
        while all(process.poll() is None for process in processes):
            time.sleep(0.5)
        print("A demo process exited; stopping the other one.", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("\nStopping the web app and the worker...", flush=True)
        return 0
    finally:
        stop(processes)


if __name__ == "__main__":
    sys.exit(main())
