"""Mining at scale (issue #6): the heuristics filter and bookkeeping of 100,000 candidate procedures, and the
streaming import of a 1 GB .jsonl.zst document file.

    .venv/bin/python benchmarks/mining_scale.py --db h2e_bench_mining [--candidates 100000] [--size-mb 1024]

Part 1 (target: <= 60 s): drops, creates and migrates the database; stores 100,000 documents and a mining run
over them (setup, timed apart); then times what the pipeline does around the LLM for 100,000 candidates:
  a. writing their 100,000 extraction outcomes (goal + 4-16 steps of ~10 words; a fifth of them repetitive),
     in the batches an LLM stage writes (bulk, one transaction per 1,000),
  b. the heuristics filter stage (mining.runs.prefilter_stage_run: reads the extraction payloads 5,000 at a
     time, step count and n-gram repetition, 100,000 outcomes written),
  c. the bookkeeping the job and the pages do: the documents waiting for the LLM filter, the job's counts,
     the funnel (SQL aggregates per topic and stage).
Part 2 (target: peak memory <= 1 GB): writes a .jsonl.zst file of documents (~4 KB of text each, 14 topics)
until the compressed file reaches --size-mb, then runs `manage.py import_documents` on it in a subprocess
and reads the subprocess's peak RSS (getrusage RUSAGE_CHILDREN, ru_maxrss) and wall time; checks the count.
The database is dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from mining.topics import WEBORGANIZER_TOPICS as TOPICS  # noqa: E402


def psql(*command: str) -> None:
    subprocess.run([*command[:1], "-h", "127.0.0.1", "-U", "postgres", *command[1:]], check=True)


def setup_django(db: str, *, migrate: bool = True) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    import django

    django.setup()
    from django.core.management import call_command

    if migrate:
        call_command("migrate", verbosity=0)


def vocabulary(rng: random.Random, n: int = 20_000) -> list[str]:
    return ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10))) for _ in range(n)]


def sentence(rng: random.Random, words: list[str], n: int) -> str:
    return " ".join(rng.choices(words, k=n)).capitalize() + "."


def candidate(rng: random.Random, words: list[str]) -> dict[str, Any]:
    steps = [sentence(rng, words, 10) for _ in range(rng.randint(4, 16))]
    if rng.random() < 0.2:
        steps = [steps[0]] * len(steps)
    return {"has_valid_process": True, "goal": sentence(rng, words, 12), "steps": steps}


# --- part 1 ----------------------------------------------------------------------------------------------


def store_documents_and_run(n: int, words: list[str]) -> Any:
    from h2e_site.jobs.models import Job
    from mining.config import run_config_from_mapping
    from mining.models import MiningRun, SourceDocument, Topic

    rng = random.Random(1)
    topics = [Topic.objects.get_or_create(name=t)[0] for t in TOPICS]
    for start in range(0, n, 5000):
        SourceDocument.objects.bulk_create(
            SourceDocument(doc_id=f"doc-{i:07d}", text=sentence(rng, words, 60), topic=topics[i % 14])
            for i in range(start, min(n, start + 5000))
        )
    stage = {"model": "m", "backend": "openai", "provider": "bench", "base_url": "http://127.0.0.1:9/v1"}
    config = run_config_from_mapping({"name": "scale", "stages": {"default": stage}})
    run = MiningRun.objects.create(name="scale", config=config.data)
    through = MiningRun.documents.through
    pks = list(SourceDocument.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), 10_000):
        through.objects.bulk_create(
            through(miningrun_id=run.pk, sourcedocument_id=pk) for pk in pks[start : start + 10_000]
        )
    run.job = Job.objects.create(kind="mine", total=n)
    run.save()
    return run, pks


def store_extractions(run: Any, pks: list[int], words: list[str]) -> None:
    from django.db import transaction

    from mining.models import StageOutcome
    from mining.runs import outcomes_insert

    rng = random.Random(2)
    for start in range(0, len(pks), 1000):
        with transaction.atomic():
            outcomes_insert(
                [
                    StageOutcome(
                        run=run,
                        document_id=pk,
                        stage="extraction",
                        passed=True,
                        payload=candidate(rng, words),
                        prompt_tokens=900,
                        completion_tokens=180,
                        cost=0.0026,
                    )
                    for pk in pks[start : start + 1000]
                ]
            )


def part1(n: int) -> dict[str, Any]:
    from mining.models import StageOutcome
    from mining.runs import pending_documents, prefilter_stage_run, run_counts
    from mining.selectors import run_funnel

    words = vocabulary(random.Random(0))
    t0 = time.perf_counter()
    run, pks = store_documents_and_run(n, words)
    setup_s = time.perf_counter() - t0

    t, c = time.perf_counter(), time.process_time()
    store_extractions(run, pks, words)
    extraction_s, extraction_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    written = prefilter_stage_run(run=run)
    prefilter_s, prefilter_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    waiting = len(pending_documents(run, "filter"))
    counts = run_counts(run)
    funnel = run_funnel(run)
    bookkeeping_s, bookkeeping_cpu = time.perf_counter() - t, time.process_time() - c
    passed = StageOutcome.objects.filter(run=run, stage="prefilter", passed=True).count()
    assert written == n and waiting == passed, (written, waiting, passed)
    assert funnel.total.cells[1].processed == n
    return {
        "candidates": n,
        "setup_s": setup_s,
        "extraction_outcomes_s": extraction_s,
        "prefilter_s": prefilter_s,
        "bookkeeping_s": bookkeeping_s,
        "timed_total_s": extraction_s + prefilter_s + bookkeeping_s,
        "python_cpu_s": {
            "extraction": extraction_cpu,
            "prefilter": prefilter_cpu,
            "bookkeeping": bookkeeping_cpu,
        },
        "load_average_1m": os.getloadavg()[0],
        "prefilter_passed": passed,
        "rejected_finished": counts[0],
    }


# --- part 2 ----------------------------------------------------------------------------------------------


def write_documents(path: Path, size_mb: int) -> tuple[int, int]:
    """Documents of ~4 KB until the compressed file reaches size_mb; (documents, uncompressed bytes)."""
    import zstandard

    rng = random.Random(3)
    words = vocabulary(rng, 200_000)
    target = size_mb * 1024 * 1024
    n = raw = 0
    with path.open("wb") as sink:
        writer = zstandard.ZstdCompressor(level=3).stream_writer(sink, closefd=False)
        while sink.tell() < target:
            lines = []
            for _ in range(500):
                record = {
                    "id": f"web-{n:08d}",
                    "text": " ".join(rng.choices(words, k=600)),
                    "url": f"https://example.org/{n}",
                    "topic": TOPICS[n % 14],
                }
                lines.append(json.dumps(record))
                n += 1
            data = ("\n".join(lines) + "\n").encode()
            raw += len(data)
            writer.write(data)
            writer.flush()
        writer.close()
    return n, raw


def part2(db: str, size_mb: int) -> dict[str, Any]:
    from mining.models import SourceDocument

    before = SourceDocument.objects.count()
    with tempfile.TemporaryDirectory(prefix="h2e-mining-bench-") as folder:
        path = Path(folder) / "documents.jsonl.zst"
        t = time.perf_counter()
        n, raw = write_documents(path, size_mb)
        write_s = time.perf_counter() - t
        size = path.stat().st_size
        env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}", "DEBUG": "1"}
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "import_documents", str(path), "--verbosity", "0"],
            check=True,
            env=env,
            cwd=ROOT,
        )
        import_s = time.perf_counter() - t
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    imported = SourceDocument.objects.count() - before
    assert imported == n, (imported, n)
    return {
        "documents": n,
        "file_mb": size / 1024 / 1024,
        "uncompressed_mb": raw / 1024 / 1024,
        "write_s": write_s,
        "import_s": import_s,
        "import_mb_per_s": raw / 1024 / 1024 / import_s,
        "peak_rss_mb": peak_kib / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default="h2e_bench_mining")
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--size-mb", type=int, default=1024, help="compressed size of the document file")
    parser.add_argument("--skip-import", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    setup_django(args.db, migrate=fresh_database(args.db))
    try:
        results: dict[str, Any] = {"part1": part1(args.candidates)}
        print(json.dumps(results, indent=2), flush=True)
        if not args.skip_import:
            results["part2"] = part2(args.db, args.size_mb)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            psql("dropdb", "--if-exists", args.db)
    results["machine"] = (
        f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    results["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
