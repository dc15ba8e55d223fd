"""Annotator load (issue #4): 50 concurrent annotators against gunicorn + PostgreSQL on loopback.

    .venv/bin/python benchmarks/annotator_load.py --db h2e_bench_annot [--append-doc]

1. Drops, creates and migrates the database (PostgreSQL on 127.0.0.1:5432) and stores a study of N items
   (L1 and L2 of 8 steps of ~15 words), k = 3, no dwell time (the load generator compresses an annotator's
   90 s per item into a few seconds of think time, so the server sees far more requests than real people
   would send).
2. Collects the static files and starts gunicorn (4 sync workers, DEBUG=0, production settings but plain
   HTTP) on a free loopback port.
3. Starts 50 annotator threads at once (httpx2, the openai package's HTTP client). Each goes through the
   Prolific entry URL, consent, training and the comprehension check, then annotates items until the run
   ends: fetch the item page (which leases the next item), acknowledge the goal, reveal every L2 step
   (htmx POSTs), submit. Between actions it waits an exponentially distributed think time (mean --think s).
   Arrivals are spread evenly over --ramp seconds (Prolific releases places gradually; 50 people arriving
   in the same second is measured with --ramp 0).
4. Reports the latency of each kind of request as the client saw it (p50/p95/p99), the request rate, and
   every error (any status >= 400, or a connection error). Then checks the database: no item has more than
   k annotations, no participant has an item twice.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import secrets
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

WORDS = ["oven", "flour", "sugar", "butter", "whisk", "bowl", "heat", "stir", "pour", "tray", "cool", "slice"]


def sentence(rng: random.Random, n: int = 15) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def setup_django(db: str, *, migrate: bool = True) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    import django

    django.setup()
    from django.core.management import call_command

    if migrate:
        call_command("migrate", verbosity=0)


def store_study(n_items: int) -> Any:
    from annotation.flow import services
    from judging.models import Generation, Generator
    from mining.models import Procedure

    rng = random.Random(0)
    generator = Generator.objects.create(generator_id="bench-annot", model="bench/model")
    procedures = Procedure.objects.bulk_create(
        Procedure(
            source_example_id=f"annot-{i}",
            goal=sentence(rng, 20),
            steps=[sentence(rng) for _ in range(8)],
            resources=["bowl", "oven"],
        )
        for i in range(n_items)
    )
    Generation.objects.bulk_create(
        Generation(generator=generator, procedure=p, predicted_steps=[sentence(rng) for _ in range(8)])
        for p in procedures
    )
    return services.study_create(
        title="Load study",
        slug="load",
        selection=services.Selection(generator_ids=[generator.pk]),
        annotators_per_item=3,
        items_per_participant=0,
        min_dwell_seconds=0,
        attention_check_every=0,
    )


def server_env(db: str, static_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DATABASE_URL"}}
    env.update(
        DEBUG="0",
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{db}",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        STATIC_ROOT=str(static_root),
        LOG_LEVEL="WARNING",
    )
    return env


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    command = [sys.executable, "-m", "gunicorn", "h2e_site.wsgi:application", "--workers", str(workers)]
    process = subprocess.Popen([*command, "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env)
    import httpx2

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx2.get(f"http://127.0.0.1:{port}/a/load/", timeout=2)
            return process
        except httpx2.HTTPError:
            time.sleep(0.3)
    process.terminate()
    raise RuntimeError("gunicorn did not start")


def _proc_stats() -> Iterator[tuple[int, int, int]]:
    """(pid, ppid, CPU ticks) of every process, from /proc."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(stat.parent.name), int(fields[1]), int(fields[11]) + int(fields[12])  # utime + stime


def workers_cpu_seconds(master: int) -> float:
    """CPU time (user + system) of the gunicorn master's children."""
    return sum(ticks for _, ppid, ticks in _proc_stats() if ppid == master) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(db: str) -> float:
    """CPU time of the PostgreSQL backends connected to the benchmark's database (the workers keep theirs)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [db])
        pids = {row[0] for row in cursor.fetchall()}
    return sum(ticks for pid, _, ticks in _proc_stats() if pid in pids) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time spent by everything on the machine (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def run_load(base_url: str, n_annotators: int, seconds: float, think: float, ramp: float) -> dict[str, Any]:
    from tests.annotation.http_annotator import HttpAnnotator

    timings: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    answers = {"q0": "1", "q1": "0", "q2": "1"}  # the default comprehension questions
    start = threading.Barrier(n_annotators)
    stop_at: list[float] = []

    def record(kind: str, elapsed: float) -> None:
        timings[kind].append(elapsed)

    def annotator(n: int) -> None:
        rng = random.Random(n)
        person = HttpAnnotator(base_url, "load", f"{n:024x}", timer=record)

        def pause() -> None:
            time.sleep(min(rng.expovariate(1 / think), 5 * think))

        try:
            start.wait()
            time.sleep(ramp * n / n_annotators)  # arrivals spread evenly over the ramp
            person.qualify(answers)
            while time.monotonic() < stop_at[0] and person.annotate_next(pause=pause):
                pause()
        except Exception as exc:
            errors.append(f"annotator {n}: {exc!r}"[:400])
        finally:
            person.close()

    threads = [threading.Thread(target=annotator, args=(n,)) for n in range(n_annotators)]
    stop_at.append(time.monotonic() + seconds)
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    return {"timings": timings, "errors": errors, "wall_s": wall}


def check_database(study: Any) -> dict[str, Any]:
    from django.db.models import Count

    from annotation.base.models import Annotation, StudyItem

    over = StudyItem.objects.filter(study=study, completed_count__gt=3).count()
    twice = (
        Annotation.objects.filter(study=study)
        .values("participant_id", "item_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count()
    )
    return {"annotations": Annotation.objects.filter(study=study).count(), "over_k": over, "twice": twice}


def summarise(load: dict[str, Any]) -> dict[str, Any]:
    kinds = {}
    for kind, values in sorted(load["timings"].items()):
        kinds[kind] = {
            "n": len(values),
            "p50_ms": 1000 * percentile(values, 50),
            "p95_ms": 1000 * percentile(values, 95),
            "p99_ms": 1000 * percentile(values, 99),
            "max_ms": 1000 * max(values),
        }
    total = sum(k["n"] for k in kinds.values())
    return {"kinds": kinds, "requests": total, "per_s": total / load["wall_s"], "wall_s": load["wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="h2e_bench_annot", help="dropped and re-created")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=90, help="how long annotators keep taking items")
    parser.add_argument("--think", type=float, default=1.0, help="mean think time between actions (s)")
    parser.add_argument("--ramp", type=float, default=20, help="arrivals spread over this many seconds")
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--append-doc", action="store_true", help="append the figures to docs/benchmarks.md")
    args = parser.parse_args()

    setup_django(args.db, migrate=fresh_database(args.db))
    study = store_study(args.items)
    static_root = Path(os.environ.get("TMPDIR", "/tmp")) / "h2e-annot-static"
    load_before = os.getloadavg()
    server = start_gunicorn(server_env(args.db, static_root), args.port, args.workers)
    try:
        cpu = workers_cpu_seconds(server.pid), time.process_time(), machine_busy_seconds()
        load = run_load(f"http://127.0.0.1:{args.port}", args.annotators, args.seconds, args.think, args.ramp)
        server_cpu, client_cpu = workers_cpu_seconds(server.pid) - cpu[0], time.process_time() - cpu[1]
        machine_cpu, postgres_cpu = machine_busy_seconds() - cpu[2], postgres_cpu_seconds(args.db)
    finally:
        server.terminate()
        server.wait()
    summary = summarise(load)
    report = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "annotators": args.annotators,
        "think_s": args.think,
        "ramp_s": args.ramp,
        "workers": args.workers,
        **summary,
        "server_cpu_ms_per_request": 1000 * server_cpu / summary["requests"],
        "client_cpu_ms_per_request": 1000 * client_cpu / summary["requests"],
        "postgres_cpu_ms_per_request": 1000 * postgres_cpu / summary["requests"],
        # Share of the 2 cores used by everything else on the machine during the run.
        "others_cpu_percent": 100
        * max(0.0, machine_cpu - server_cpu - client_cpu - postgres_cpu)
        / (summary["wall_s"] * (os.cpu_count() or 1)),
        "errors": load["errors"],
        "database": check_database(study),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))
    if args.append_doc:
        append_doc(report)


def append_doc(report: dict[str, Any]) -> None:
    kinds = report["kinds"]
    rows = "\n".join(
        f"| {kind} | {k['n']:,} | {k['p50_ms']:.1f} | {k['p95_ms']:.1f} | **{k['p99_ms']:.1f}** "
        f"| {k['max_ms']:.1f} |"
        for kind, k in kinds.items()
    )
    item_p99 = kinds.get("item_page", {}).get("p99_ms", float("nan"))
    submit_p99 = kinds.get("submit", {}).get("p99_ms", float("nan"))
    met = lambda value, target: "met" if value <= target else "NOT met"  # noqa: E731
    load_before = " ".join(f"{x:.2f}" for x in report["loadavg_before"])
    load_after = " ".join(f"{x:.2f}" for x in report["loadavg_after"])
    text = f"""
### Run of {report["date"]}

Machine: {report["machine"]}; gunicorn {report["workers"]} sync workers, DEBUG=0, PostgreSQL on loopback.
{report["annotators"]} annotators arriving over {report["ramp_s"]:.0f} s, mean think time \
{report["think_s"]} s between actions, {report["wall_s"]:.0f} s in all:
{report["requests"]:,} requests ({report["per_s"]:.0f}/s), {len(report["errors"])} errors;
{report["database"]["annotations"]:,} annotations stored, items over k: {report["database"]["over_k"]},
participant x item twice: {report["database"]["twice"]}. CPU per request: gunicorn workers \
{report["server_cpu_ms_per_request"]:.1f} ms, PostgreSQL backends \
{report["postgres_cpu_ms_per_request"]:.1f} ms, the load generator (same 2 cores) \
{report["client_cpu_ms_per_request"]:.1f} ms. Other processes on the machine used \
**{report["others_cpu_percent"]:.0f} %** of the 2 cores during the run.

| request | n | p50 ms | p95 ms | p99 ms | max ms |
| --- | --- | --- | --- | --- | --- |
{rows}

Item page p99 {item_p99:.1f} ms (target <= 150 ms: {met(item_p99, 150)});
submit p99 {submit_p99:.1f} ms (target <= 250 ms: {met(submit_p99, 250)});
errors {len(report["errors"])} (target 0).
Load average (1, 5, 15 min) before: {load_before}; after: {load_after}.
"""
    insert_into_section("## Annotator load (issue #4)", text)


if __name__ == "__main__":
    main()
