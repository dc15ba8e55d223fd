"""The reward service under a trainer's load (issue #32): POST /api/reward/ served by gunicorn, as whole
processes, against a judge that answers in 500 ms at concurrency 64.

    .venv/bin/python benchmarks/reward_service.py --db h2e_bench_reward [--append-doc]

1. Drops, creates and migrates the database; a trainer account (staff, judging.request_reward, a token).
2. Starts the loopback judge (tests/llm_server.py) in its own process: every request answered after
   --latency seconds with a valid judge JSON (a critical failure for a third of them); a reward config whose
   judge is it, at max_concurrency 64; the studio under gunicorn (--workers sync workers), its own process.
3. One trainer: batches of --items completions never judged before (each distinct), timed from the client; the
   bound is ceil(items / 64) x latency (512 / 64 x 0.5 s = 4 s), the target 1.15 x the bound. The service's
   own CPU per item is the gunicorn workers' CPU time (/proc, user + system) over the batches, divided by
   the items. Then the same batch again: every answer from the store.
4. Two trainers at once: two batches sent together (two threads), each its own distinct completions; both
   must be answered 200 with every item scored, and each one's wall time is reported.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from benchmarks.judge_throughput import free_port, setup_django, step  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

CONCURRENCY = 64
TARGET_RATIO = 1.15
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def start_judge(port: int, latency: float) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.llm_server", "--port", str(port), "--latency", str(latency)]
    process = subprocess.Popen([*command, "--realistic"], cwd=ROOT, stdout=subprocess.DEVNULL)
    wait_for(f"http://127.0.0.1:{port}/v1/models", process)
    return process


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited ({process.returncode})")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer: it is serving
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def start_studio(port: int, workers: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "h2e_site.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--timeout",
        "60",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(f"http://127.0.0.1:{port}/api/reward/", process)
    return process


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def batch(tag: str, n: int) -> list[dict[str, Any]]:
    steps = [step(7, j) for j in range(8)]
    procedure = {"goal": "Bake a loaf of bread", "resources": ["flour", "oven"], "steps": steps}
    return [
        {
            "procedure": procedure,
            "completion": "\n".join(f"{j + 1}. {s}" for j, s in enumerate(steps)) + f"\n({tag} {i})",
            "run": f"bench-{tag.split('-')[0]}",
            "step": 0,
        }
        for i in range(n)
    ]


def post(url: str, token: str, items: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    body = json.dumps({"reward": "bench", "items": items}).encode()
    request = urllib.request.Request(
        url, body, {"Authorization": f"Token {token}", "Content-Type": "application/json"}, method="POST"
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)
    wall = time.perf_counter() - started
    scored = answer["items"]
    assert len(scored) == len(items) and all(i["how2score"] in (0, 1) for i in scored), scored[:3]
    return wall, scored


def two_at_once(url: str, token: str, n: int) -> list[float]:
    walls: list[float] = [0.0, 0.0]

    def trainer(index: int) -> None:
        walls[index], _ = post(url, token, batch(f"both{index}-{time.time_ns()}", n))

    threads = [threading.Thread(target=trainer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(walls), walls
    return walls


def measure(args: argparse.Namespace, url: str, token: str, workers: list[int]) -> dict[str, Any]:
    post(url, token, batch("warmup", 8))  # each worker: the first call loads the tokenizer and the ORM
    post(url, token, batch("warmup2", 8))
    cpu_before = cpu_s(workers)
    walls = [post(url, token, batch(f"one-{run}", args.items))[0] for run in range(args.runs)]
    cpu = cpu_s(workers) - cpu_before
    again = batch("one-0", args.items)
    stored_wall, stored = post(url, token, again)
    bound = math.ceil(args.items / CONCURRENCY) * args.latency
    return {
        "items": args.items,
        "latency_s": args.latency,
        "bound_s": bound,
        "walls_s": walls,
        "median_s": statistics.median(walls),
        "ratio": statistics.median(walls) / bound,
        "target_ratio": TARGET_RATIO,
        "cpu_ms_per_item": 1000 * cpu / (args.items * args.runs),
        "stored_wall_s": stored_wall,
        "stored_share": sum(i["from_store"] for i in stored) / len(stored),
        "two_trainers_walls_s": two_at_once(url, token, args.items),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="h2e_bench_reward", help="dropped and re-created")
    parser.add_argument("--items", type=int, default=512)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--append-doc", action="store_true", help="write the figures into docs/benchmarks.md")
    args = parser.parse_args()

    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    setup_django(args.db, 0, migrate=fresh_database(args.db))
    from tests.reward_world import trainer, write_reward_config

    _, token = trainer()
    judge_port, studio_port = free_port(), free_port()
    judge = start_judge(judge_port, args.latency)
    studio = None
    with tempfile.TemporaryDirectory() as rewards:
        judge_url = f"http://127.0.0.1:{judge_port}/v1"
        write_reward_config(
            Path(rewards), "bench", base_urls=[judge_url], concurrency=CONCURRENCY, time_budget_s=25
        )
        env = {**os.environ, "H2E_REWARD_CONFIG_DIR": rewards, "PYTHONPATH": str(ROOT)}
        try:
            studio = start_studio(studio_port, args.workers, env)
            url = f"http://127.0.0.1:{studio_port}/api/reward/"
            report = measure(args, url, token, children(studio.pid))
        finally:
            for process in (studio, judge):
                if process is not None:
                    process.terminate()
                    process.wait()
    report |= {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "gunicorn_workers": args.workers,
        "load_before": load_before,
        "load_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
    }
    print(json.dumps(report, indent=2))
    if args.append_doc:
        append_doc(report)


def append_doc(report: dict[str, Any]) -> None:
    walls = ", ".join(f"{w:.2f}" for w in report["walls_s"])
    both = ", ".join(f"{w:.2f} s" for w in report["two_trainers_walls_s"])
    text = f"""
### Measured {report["date"]} ({report["machine"]})

| | |
|---|---|
| a batch of {report["items"]} new completions, judge {1000 * report["latency_s"]:.0f} ms at concurrency \
{CONCURRENCY} | median **{report["median_s"]:.2f} s** ({walls}) |
| against the bound ceil({report["items"]}/{CONCURRENCY}) x {report["latency_s"]} s = \
{report["bound_s"]:.1f} s | **{report["ratio"]:.3f}x** (target <= {TARGET_RATIO}x) |
| the service's own CPU per item (gunicorn workers, user + system) | {report["cpu_ms_per_item"]:.2f} ms |
| the same batch again (every answer from the store) | {report["stored_wall_s"]:.2f} s, \
{100 * report["stored_share"]:.0f} % from the store |
| two trainers at once ({report["gunicorn_workers"]} gunicorn workers), a batch each | both answered: {both} |

Load average (1, 5, 15 min) before: {report["load_before"]}; after: {report["load_after"]}.
"""
    insert_into_section("## Reward service", text)


if __name__ == "__main__":
    main()
