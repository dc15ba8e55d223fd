"""`make demo` end to end: embedded SQLite database and broker in a temporary var dir, the paper's examples
loaded, gunicorn, a Celery worker and the embedded model server started together, the staff login works,
Ctrl-C stops them all.
"""

from __future__ import annotations

import filecmp
import http.cookiejar
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from h2e_site.llm.local import server_is_up

ROOT = Path(__file__).resolve().parent.parent
PAPER_TREE = ROOT / "demo" / "paper-h2e"
VENV = Path(sys.executable).parent.parent
START_TIMEOUT_SECONDS = 90
SETUP_TIMEOUT_SECONDS = 300  # make demo's demo_setup first: migrate, the imports, the synthetic world
PAPER_GENERATOR_MODELS = ("claude-opus-4.5", "gpt-5", "gemini-2.5-pro", "qwen3-8b-instruct")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class Demo:
    def __init__(self, var_dir: Path, port: int) -> None:
        self.var_dir = var_dir
        self.port = port
        self.log = var_dir.parent / "make-demo.log"
        env = {key: value for key, value in os.environ.items() if key not in {"DEBUG", "SECRET_KEY"}}
        env["H2E_VAR_DIR"] = str(var_dir)
        self.llm_port = free_port()
        env["H2E_LOCAL_LLM_URL"] = f"http://127.0.0.1:{self.llm_port}/v1"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                ["make", "--no-print-directory", "demo", f"PORT={self.port}", f"VENV={VENV}"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + SETUP_TIMEOUT_SECONDS + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"make demo exited with {self.process.returncode}:\n{self.output()}")
            if "Ctrl-C stops" in self.output():
                return  # run.py says so once the web app answers and the worker is consuming
            time.sleep(0.5)
        waited = SETUP_TIMEOUT_SECONDS + START_TIMEOUT_SECONDS
        pytest.fail(f"make demo did not come up in {waited} s:\n{self.output()}")

    def interrupt(self) -> int:
        """Ctrl-C, as a person would press it: SIGINT to the whole foreground process group."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    running = Demo(tmp_path / "var", free_port())
    try:
        yield running
    finally:
        if running.process.poll() is None:
            os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()


def staff_login(var_dir: Path) -> tuple[str, str]:
    fields = dict(
        line.split(":", 1) for line in (var_dir / "demo-login.txt").read_text(encoding="utf-8").splitlines()
    )
    return fields["username"].strip(), fields["password"].strip()


def logged_in_leaderboard(base: str, username: str, password: str, next_url: str = "/") -> tuple[str, str]:
    """Log in through the real login form and return (final URL, page HTML)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login_url = f"{base}/accounts/login/"
    with opener.open(login_url, timeout=10) as response:
        html = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token, "the login page has no CSRF token"
    form = {
        "csrfmiddlewaretoken": token.group(1),
        "username": username,
        "password": password,
        "next": next_url,
    }
    request = urllib.request.Request(
        login_url, data=urllib.parse.urlencode(form).encode(), headers={"Referer": login_url}
    )
    with opener.open(request, timeout=10) as response:
        return response.geturl(), response.read().decode()


@pytest.mark.slow
def test_it_serves_the_paper_examples_with_a_staff_login_and_stops_on_ctrl_c(demo: Demo) -> None:
    demo.wait_until_ready()
    base = f"http://127.0.0.1:{demo.port}"
    username, password = staff_login(demo.var_dir)

    final_url, page = logged_in_leaderboard(base, username, password)

    assert final_url == f"{base}/", final_url
    scripts = re.findall(r'src="(/static/[^"]+\.js)"', page)
    assert scripts, "the page loads no script"
    for script in scripts:  # vendored htmx and our own JS, served without collectstatic
        with urllib.request.urlopen(f"{base}{script}", timeout=10) as response:
            assert response.status == 200
    assert "Judged by <strong>how2judge (as printed in the paper)</strong>" in page  # the paper's judge first
    _, every_judge = logged_in_leaderboard(base, username, password, next_url="/?judge=all")
    for model in PAPER_GENERATOR_MODELS:
        assert model in every_judge, f"{model} missing from the leaderboard of every judge"
    assert (demo.var_dir / "h2e.sqlite3").exists()
    assert (demo.var_dir / "celery-broker.sqlite3").exists()

    llm_url = f"http://127.0.0.1:{demo.llm_port}/v1"
    assert (
        f"Embedded model (a plumbing/demo model: its judgments are not meaningful): {llm_url}"
        in demo.output()
    )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not server_is_up(llm_url) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert server_is_up(llm_url), f"the embedded model does not answer at {llm_url}:\n{demo.output()}"

    assert_quiet_console(demo)
    demo.interrupt()
    assert "Stopping the web app, the worker and the embedded model" in demo.output()
    assert not port_open(demo.port), "the web app still listens after Ctrl-C"
    assert not port_open(demo.llm_port), "the embedded model still listens after Ctrl-C"
    with pytest.raises(ProcessLookupError):  # no process of the demo is left: not gunicorn, not celery
        os.killpg(demo.process.pid, 0)


def assert_quiet_console(demo: Demo) -> None:
    """The console says what a person needs (URL, login, annotator link, where the logs are); the children's
    start-up chatter is in their logs under var/log/."""
    output = demo.output()
    started = output.index("Starting the web app, a Celery worker and the embedded model")
    console = output[started:].splitlines()
    assert len(console) < 21, "\n".join(console)  # 7 pages of synthetic data among them
    base = f"http://127.0.0.1:{demo.port}/"
    username, password = staff_login(demo.var_dir)
    for needed in (
        f"Open:            {base}",
        f"Staff login:     {username} / {password}",
        f"Annotator link:  {base.rstrip('/')}/a/paper-examples/?PROLIFIC_PID=",
        f"Step-types link: {base.rstrip('/')}/a/paper-step-types/?PROLIFIC_PID=",
        f"Pairwise link:   {base.rstrip('/')}/a/paper-pairwise/?PROLIFIC_PID=",
        "Synthetic demo data (seeded, simulated annotators; marked on every page):",
        f"Calibrated leaderboard:   {base}leaderboard/calibrated/",
        f"Critical-failures study:  {base}studies/synthetic-calibration/",
        f"Pairwise study:           {base}studies/synthetic-pairwise/",
        f"Step-types study:         {base}studies/synthetic-step-types/",
        f"Multiple-choice study:    {base}studies/synthetic-multiple-choice/",
        f"Mining run:               {base}mining/runs/",
        "Logs:",
        "Ctrl-C stops.",
    ):
        assert needed in output, f"{needed!r} missing from:\n{output}"
    assert output.count("Staff login") == 1, output  # printed once, when the servers are up
    assert "each annotator link holds a fresh random PROLIFIC_PID" in output
    for link in re.findall(r"(http://\S+/a/\S+)", output):  # the links work as printed, in a new browser
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(link, timeout=10) as response:
            page = response.read().decode()
        assert "/consent/" in response.geturl() and "Prolific ID is missing" not in page, link
    for chatter in ("celery@", "[tasks]", "Booting worker", "llama", "Uvicorn", "INFO"):
        assert chatter not in output[started:], f"{chatter!r} on the console:\n{output[started:]}"
    logs = demo.var_dir / "log"
    assert re.search(r"celery@\S+ ready", (logs / "worker.log").read_text(errors="replace"))
    assert "Booting worker" in (logs / "web.log").read_text(errors="replace")
    assert (logs / "llm.log").read_text(errors="replace").strip(), "the embedded model wrote no log"
    assert f"{logs / 'web.log'}" in output or "var/log/web.log" in output


def test_it_reports_a_demo_process_that_exits_with_its_log(tmp_path: Path) -> None:
    """A child that dies (here the web app: its port is taken) is named on the console with its exit status
    and the end of its log, and the demo stops."""
    env = {
        key: value for key, value in os.environ.items() if key not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}
    }
    env |= {
        "H2E_VAR_DIR": str(tmp_path / "var"),
        "DEBUG": "1",
        "H2E_LOCAL_LLM_URL": f"http://127.0.0.1:{free_port()}/v1",
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "demo/run.py", "--port", str(port)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The web app exited with status" in result.stderr
    assert "Last lines of" in result.stderr and "web.log" in result.stderr
    assert "Connection in use" in result.stderr or "Address already in use" in result.stderr, result.stderr
    assert "Stopped." in result.stdout


@pytest.mark.slow
def test_it_keeps_the_demo_password_across_setups(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(DEBUG="1", H2E_VAR_DIR=str(tmp_path))
    pids = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "manage.py", "demo_setup"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr
        pids += re.findall(r"PROLIFIC_PID=([0-9a-f]{24})&STUDY_ID=demo&", result.stdout)
    username, password = staff_login(tmp_path)
    assert result.stdout.count("Staff login:") == 1
    assert f"Staff login: {username} / {password}" in result.stdout
    assert "Annotator view of the demo study: /a/paper-examples/?PROLIFIC_PID=" in result.stdout
    assert "Annotator view of the step-types study: /a/paper-step-types/?PROLIFIC_PID=" in result.stdout
    assert "Annotator view of the pairwise study: /a/paper-pairwise/?PROLIFIC_PID=" in result.stdout
    assert len(pids) == 6 and len(set(pids)) == 6, pids  # a fresh random PID in every link of every run
    # counted as the study page counts them: the regular items, then the attention checks
    assert "Demo study paper-examples: 11 items and 1 attention check, k = 3" in result.stdout
    assert "Step-types study paper-step-types: 18 items and 1 attention check, k = 3" in result.stdout
    assert "Pairwise study paper-pairwise: 9 items and 1 attention check, k = 3" in result.stdout
    assert "Filled token counts of 0 procedure(s) (L1) and the metrics of 0 generation(s)" in result.stdout
    brief = subprocess.run(
        [sys.executable, "manage.py", "demo_setup", "--skip-migrate", "--no-summary"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert brief.returncode == 0 and "Staff login" not in brief.stdout and "PROLIFIC_PID" not in brief.stdout
    check = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "--no-imports",
            "-c",
            "from django.contrib.auth import authenticate; from judging.models import Generation, Judgment;"
            "from annotation.base.models import Study;"
            f"u = authenticate(username={username!r}, password={password!r});"
            "paper = dict(generator__model__startswith='synthetic/');"
            "print(u is not None and u.is_staff, Generation.objects.exclude(**paper).count(),"
            " Judgment.objects.exclude(**paper).count(),"
            " Study.objects.filter(slug='paper-examples', is_open=True).count(),"
            " Study.objects.filter(slug='paper-step-types', kind='step_types', is_open=True).count(),"
            " Study.objects.get(slug='paper-step-types').items.filter(is_attention_check=False).count(),"
            " Generation.objects.filter(n_tokens__isnull=True).count())",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    # the paper's examples (the synthetic world aside), one demo study of each kind, kept across setups; the
    # step-types one over the demo procedures; every generation with its token metrics (the leaderboard's
    # columns)
    assert check.stdout.split() == ["True", "11", "11", "1", "1", "18", "0"]


def tree_files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def test_it_ships_the_paper_tree_its_builder_writes(tmp_path: Path) -> None:
    out = tmp_path / "paper-h2e"
    result = subprocess.run(
        [sys.executable, "demo/build_paper_tree.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    files = tree_files(out)
    assert files == tree_files(PAPER_TREE)
    assert len([f for f in files if f.endswith("generations.jsonl")]) == 5  # one run per generator model
    _, mismatch, errors = filecmp.cmpfiles(out, PAPER_TREE, files, shallow=False)
    assert (mismatch, errors) == ([], [])


@pytest.mark.django_db
def test_it_scores_the_paper_tree_as_its_aggregates_say() -> None:
    call_command("import_bench", str(ROOT / "demo" / "paper-examples" / "bench.jsonl"), verbosity=0)
    call_command("import_h2e", str(PAPER_TREE), verbosity=0)
    output = io.StringIO()
    call_command("leaderboard", format="json", stdout=output)
    rows = {(row["generator_id"], row["judge_id"]): row for row in json.loads(output.getvalue())}

    summaries = sorted(PAPER_TREE.glob("*/judgments/*/aggregate/summary.json"))
    assert len(summaries) == len(rows) == 5
    for path in summaries:
        judge_dir, run_dir = path.parent.parent, path.parent.parent.parent.parent
        key = (run_dir.name.rsplit("_", 1)[1], judge_dir.name.rsplit("_", 1)[1])
        summary = json.loads(path.read_text(encoding="utf-8"))
        assert rows[key]["how2score_percent"] == pytest.approx(summary["how2score_percent"]), path
        assert rows[key]["n_examples"] == summary["n_examples"], path
