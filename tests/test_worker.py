"""A real Celery worker process runs an import job: on Redis, and on the embedded SQLite broker.

The worker and the process that enqueues the job (`manage.py shell`, as the admin or API would) are separate
processes configured only through the environment, pointed at pytest-django's test database. Rows are
committed (transaction=True) so every process sees them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from h2e_site.jobs.models import Job, JobStatus
from mining.models import Procedure
from tests.worker_process import ROOT, Worker, process_env

JOB_TIMEOUT_SECONDS = 60
BENCH_RECORDS = [
    {
        "source_example_id": f"worker-test-{n}",
        "topic": "Home & Hobbies",
        "goal": f"Repot a houseplant, variant {n}",
        "resources": ["pot", "potting mix"],
        "steps": ["Water the plant the day before.", "Ease the plant out.", "Set it in fresh mix."],
    }
    for n in range(3)
]

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
RunImport = Callable[[dict[str, str]], Job]


@pytest.fixture
def bench_file(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in BENCH_RECORDS), encoding="utf-8"
    )
    return path


def enqueue_import(env: dict[str, str], bench: Path) -> int:
    """Create the import job from another process, exactly as the admin and the API do."""
    code = (
        "from pathlib import Path\n"
        "from judging.import_jobs import import_job_create\n"
        f"job = import_job_create(paths=[Path({str(bench)!r})], kind='bench', split='bench',"
        " skip_invalid=False, created_by=None)\n"
        "print('JOB', job.pk)\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return int(result.stdout.split("JOB", 1)[1].split()[0])


def wait_for_job(job_pk: int, worker: Worker) -> Job:
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_pk)
        if job.is_finished:
            return job
        if worker.process.poll() is not None:
            pytest.fail(f"the worker died with {worker.process.returncode}:\n{worker.log}")
        time.sleep(0.3)
    pytest.fail(
        f"job {job_pk} still {Job.objects.get(pk=job_pk).status} after {JOB_TIMEOUT_SECONDS} s:\n{worker.log}"
    )


@pytest.fixture
def run_import_on_worker(bench_file: Path) -> Iterator[RunImport]:
    workers: list[Worker] = []

    def run(env: dict[str, str]) -> Job:
        worker = Worker(env)
        workers.append(worker)
        worker.wait_until_ready()
        job = wait_for_job(enqueue_import(env, bench_file), worker)
        assert f"judging.run_import_job[{job.celery_task_id}] received" in worker.log, worker.log
        return job

    try:
        yield run
    finally:
        for worker in workers:
            worker.stop()


def assert_imported(job: Job) -> None:
    assert job.status == JobStatus.SUCCEEDED, (job.status, job.error)
    assert job.finished_at is not None
    stored = set(Procedure.objects.values_list("source_example_id", flat=True))
    assert stored == {r["source_example_id"] for r in BENCH_RECORDS}


def test_it_runs_an_import_job_on_a_worker_over_redis(
    run_import_on_worker: RunImport, tmp_path: Path
) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL is not set (CI sets it, and fails when Redis is unreachable)")
    job = run_import_on_worker(process_env(redis_url=redis_url, var_dir=tmp_path))
    assert_imported(job)


def test_it_runs_an_import_job_on_the_embedded_sqlite_broker(
    run_import_on_worker: RunImport, tmp_path: Path
) -> None:
    job = run_import_on_worker(process_env(redis_url=None, var_dir=tmp_path))
    assert_imported(job)
    assert (tmp_path / "celery-broker.sqlite3").exists()
