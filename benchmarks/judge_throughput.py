"""Judge throughput (issue #3): how fast the app judges through an OpenAI-compatible server, and whether it
holds a requests-per-minute limit.

    .venv/bin/python benchmarks/judge_throughput.py --db h2e_bench_judge [--append-doc]

1. Drops, creates and migrates the database (PostgreSQL on 127.0.0.1:5432), stores N procedures and one
   generator's N generations (L1 and L2 of 8 steps of ~12 words).
2. Starts the loopback server (tests/llm_server.py) in its own process: every request answered after 500 ms
   with a valid judge JSON (~120 words of reasoning, a critical failure for a third of them).
3. Throughput: a judge job over the N generations at max_concurrency 64, no rate limit, run through the real
   path (judging.judge_jobs.judge_job_run: prompts, backend, parsing, results written in short transactions).
   The bound is 64 / 0.5 s = 128 judgments/s.
4. Rate limit: a second judge with max_requests_per_minute 600 over M generations; the rate is measured from
   the arrival times the server recorded.
The app's overhead per judgment is its own CPU time (this process: client threads, parsing, ORM) and the
time the calling thread spends storing each result; the server runs in another process, so none of its
work is counted.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

LATENCY_S = 0.5
CONCURRENCY = 64
WORDS = [
    "oven",
    "flour",
    "sugar",
    "butter",
    "whisk",
    "bowl",
    "heat",
    "minutes",
    "stir",
    "pour",
    "tray",
    "cool",
    "slice",
    "serve",
    "water",
    "pan",
]


def step(i: int, j: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(12)).capitalize() + "."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def start_loopback(port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.llm_server", "--port", str(port), "--latency", str(LATENCY_S)]
    process = subprocess.Popen([*command, "--realistic"], cwd=ROOT, stdout=subprocess.DEVNULL)
    for _ in range(100):
        try:
            get_json(f"http://127.0.0.1:{port}/v1/models")
            return process
        except OSError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError("the loopback server did not start")


def setup_django(db: str, redis_db: int, *, migrate: bool = True) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ["REDIS_URL"] = f"redis://127.0.0.1:6379/{redis_db}"  # jobs are enqueued here, never consumed
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    if migrate:
        call_command("migrate", verbosity=0)


def store_generations(n: int) -> Any:
    from h2e_site.llm.config import config_from_mapping
    from judging.configs import generator_for_config
    from judging.models import Generation
    from mining.models import Procedure

    procedures = Procedure.objects.bulk_create(
        Procedure(
            source_example_id=f"bench-{i}", goal=f"Bake cake number {i}", steps=[step(i, j) for j in range(8)]
        )
        for i in range(n)
    )
    generator = generator_for_config(
        config_from_mapping(
            {
                "model": "loopback/generator",
                "backend": "openai",
                "provider": "openai",
                "base_url": "http://127.0.0.1:9/v1",
            },
            role="generator",
        )
    )
    Generation.objects.bulk_create(
        Generation(
            generator=generator,
            procedure=p,
            prompt="(benchmark)",
            model_completion="\n".join(f"{j + 1}. {s}" for j, s in enumerate(p.steps)),
            predicted_steps=p.steps[::-1],
        )
        for p in procedures
    )
    return generator


def judge_config(name: str, base_url: str, rpm: int) -> Any:
    from h2e_site.llm.config import config_from_mapping
    from judging.configs import judge_for_config

    data = {
        "model": name,
        "backend": "openai",
        "provider": "openai",
        "base_url": base_url,
        "max_concurrency": CONCURRENCY,
        "max_requests_per_minute": rpm,
        "max_tokens_per_minute": 10**10,
        "max_new_tokens": 1024,
        "request_timeout_s": 30,
    }
    return judge_for_config(config_from_mapping(data, role="judge"))


class TimedBackend:
    """The real backend, with the time the calling thread spends in on_result (storing) measured."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.config = inner.config
        self.store_s = 0.0
        self.latencies: list[float] = []

    def run(
        self,
        requests: Iterable[Any],
        on_result: Callable[[Any], None],
        *,
        should_stop: Callable[[], bool],
    ) -> None:
        """The runner writes buffered results from on_result and from should_stop: both are timed."""

        def timed_result(result: Any) -> None:
            started = time.perf_counter()
            on_result(result)
            self.store_s += time.perf_counter() - started
            self.latencies.append(result.latency_s)

        def timed_should_stop() -> bool:
            started = time.perf_counter()
            try:
                return should_stop()
            finally:
                self.store_s += time.perf_counter() - started

        self.inner.run(requests, timed_result, should_stop=timed_should_stop)

    def close(self) -> None:
        self.inner.close()


def judge_run(judge: Any, generation_ids: list[int]) -> dict[str, Any]:
    from h2e_site.jobs.models import JobStatus
    from h2e_site.llm.backends import backend_from_config
    from judging.configs import config_for_judge
    from judging.judge_jobs import judge_job_create, judge_job_run
    from judging.models import JudgeError, Judgment

    job = judge_job_create(judge=judge, generation_ids=generation_ids)
    backend = TimedBackend(backend_from_config(config_for_judge(judge).backend_config()))
    cpu, wall = time.process_time(), time.perf_counter()
    job = judge_job_run(job_id=job.pk, backend=backend)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    backend.close()
    assert job is not None and job.status == JobStatus.SUCCEEDED, job and (job.status, job.error)
    stored = Judgment.objects.filter(judge=judge, parse_failed=False).count()
    errors = JudgeError.objects.filter(judge=judge).count()  # failed requests: their own table, no judgment
    assert stored == len(generation_ids) and not errors, (
        f"{stored} judgments stored and {errors} request errors, expected {len(generation_ids)} and 0"
    )
    n = len(generation_ids)
    return {
        "n": n,
        "wall_s": wall,
        "per_s": n / wall,
        "cpu_ms": 1000 * cpu / n,
        "store_ms": 1000 * backend.store_s / n,
        "client_latency_ms": 1000 * sum(backend.latencies) / n,
        "with_failures": Judgment.objects.filter(judge=judge, has_failure=True).count(),
    }


def observed_rpm(arrivals: list[float]) -> float:
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="h2e_bench_judge", help="dropped and re-created")
    parser.add_argument("--redis-db", type=int, default=4)
    parser.add_argument("-n", type=int, default=2000, help="generations judged at full speed")
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--rpm-n", type=int, default=400, help="generations judged under the rpm limit")
    parser.add_argument("--append-doc", action="store_true", help="append the figures to docs/benchmarks.md")
    args = parser.parse_args()

    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    setup_django(args.db, args.redis_db, migrate=fresh_database(args.db))
    generator = store_generations(args.n)
    from judging.models import Generation

    ids = list(Generation.objects.filter(generator=generator).order_by("pk").values_list("pk", flat=True))
    port = free_port()
    server = start_loopback(port)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        full = judge_run(judge_config("loopback/judge", base_url, rpm=10**7), ids)
        peak = get_json(f"http://127.0.0.1:{port}/stats")["max_in_flight"]
        before = get_json(f"http://127.0.0.1:{port}/stats")["count"]
        limited = judge_run(judge_config("loopback/judge-rpm", base_url, rpm=args.rpm), ids[: args.rpm_n])
        arrivals = get_json(f"http://127.0.0.1:{port}/stats")["received_at"][before:]
    finally:
        server.terminate()
        server.wait()
        import redis

        redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()  # the never-consumed job messages
    rpm = observed_rpm(arrivals)
    bound = CONCURRENCY / LATENCY_S
    waves_s = math.ceil(full["n"] / CONCURRENCY) * LATENCY_S
    report = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "full_speed": full,
        "peak_in_flight": peak,
        "bound_per_s": bound,
        "ideal_wall_s": waves_s,
        "rate_limited": limited,
        "rpm_limit": args.rpm,
        "rpm_observed": rpm,
        "rpm_error_percent": 100 * (rpm - args.rpm) / args.rpm,
        "load_before": load_before,
        "load_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
    }
    print(json.dumps(report, indent=2))
    if args.append_doc:
        append_doc(report)


def append_doc(report: dict[str, Any]) -> None:
    full, limited = report["full_speed"], report["rate_limited"]
    text = f"""
### Measured {report["date"]} ({report["machine"]})

| | |
|---|---|
| judgments at concurrency {CONCURRENCY}, 500 ms per answer | {full["n"]:,} in {full["wall_s"]:.1f} s |
| throughput | **{full["per_s"]:.1f} judgments/s** (bound {report["bound_per_s"]:.0f}/s; target >= 100/s) |
| peak requests in flight (server side) | {report["peak_in_flight"]} |
| app CPU per judgment (client threads, parsing, ORM) | {full["cpu_ms"]:.2f} ms |
| calling thread storing results, per judgment (written in groups) | {full["store_ms"]:.2f} ms |
| mean latency seen by the client (server: 500 ms) | {full["client_latency_ms"]:.1f} ms |
| judgments with a critical failure | {full["with_failures"]:,} |
| limit {report["rpm_limit"]} requests/minute, {limited["n"]} judgments | observed \
**{report["rpm_observed"]:.1f}/min** ({report["rpm_error_percent"]:+.2f} %) in {limited["wall_s"]:.1f} s |

Load average (1, 5, 15 min) before: {report["load_before"]}; after: {report["load_after"]}.
"""
    insert_into_section("## Judge throughput", text)


if __name__ == "__main__":
    main()
