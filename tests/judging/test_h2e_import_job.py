"""Imports as jobs: import_job_create enqueues on commit; the service the task calls tracks the Job row.

The real-worker path (a Celery worker consuming the queue) is covered by the worker tests; here the task's
service is called directly and the enqueued message is read back from the real broker.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from h2e_site.celery import app
from h2e_site.jobs.models import Job, JobStatus
from judging.import_jobs import import_job_create, import_job_run
from judging.models import Judgment
from judging.tasks import run_import_job
from mining.models import Procedure
from tests.h2e_trees import build_standard_tree, write_lines

pytestmark = pytest.mark.django_db


def _bench_file(tmp_path: Path, *, bad: bool) -> Path:
    good = {
        "source_example_id": "job-1",
        "topic": "Health",
        "goal": "Stretch.",
        "steps": ["Stand.", "Reach."],
    }
    lines = [json.dumps(good)]
    if bad:
        lines.append(json.dumps({"source_example_id": "job-2", "goal": "", "steps": ["x"]}))
    return write_lines(tmp_path / "bench.jsonl", lines)


def _take_message(task_id: str) -> Any:
    """Read the task message with this id back from the broker (and ack it), leaving any others queued."""
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue("default")
        try:
            for _ in range(50):
                message = queue.get(timeout=5)
                if message.headers.get("id") == task_id:
                    message.ack()
                    return message
                message.requeue()
        finally:
            queue.close()
    raise AssertionError(f"task {task_id} not found on the broker")


def test_it_creates_the_job_and_enqueues_only_on_commit(
    tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = _bench_file(tmp_path, bad=False)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = import_job_create(paths=[path], kind="bench", split="train", skip_invalid=True)
        assert Job.objects.get(pk=job.pk).celery_task_id == ""  # nothing sent before the commit
    assert len(callbacks) == 1
    assert job.kind == "import" and job.status == JobStatus.QUEUED
    assert job.parameters == {
        "import_kind": "bench",
        "paths": [str(path)],
        "split": "train",
        "skip_invalid": True,
    }
    callbacks[0]()
    job.refresh_from_db()
    assert job.celery_task_id
    message = _take_message(job.celery_task_id)
    assert message.headers["task"] == "judging.run_import_job"
    assert message.decode()[0] == [job.pk]


def test_it_refuses_an_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown import kind"):
        import_job_create(paths=[tmp_path], kind="csv")  # type: ignore[arg-type]


def _created_job(paths: list[Path], kind: str, *, skip_invalid: bool, capture: Any) -> Job:
    with capture(execute=False):
        return import_job_create(paths=paths, kind=kind, skip_invalid=skip_invalid)  # type: ignore[arg-type]


def test_it_fails_the_job_naming_rejected_lines(
    tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = _bench_file(tmp_path, bad=True)
    job = _created_job([path], "bench", skip_invalid=False, capture=django_capture_on_commit_callbacks)
    import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert f"{path}:2: goal: missing or empty" in job.error
    assert (job.total, job.done, job.failed) == (1, 0, 1)
    assert job.started_at and job.finished_at
    assert job.parameters["report"]["files"][0]["n_errors"] == 1
    assert not Procedure.objects.filter(source_example_id="job-1").exists()


def test_it_imports_the_rest_with_skip_invalid(
    tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = _bench_file(tmp_path, bad=True)
    job = _created_job([path], "bench", skip_invalid=True, capture=django_capture_on_commit_callbacks)
    import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert (job.total, job.done, job.failed) == (1, 1, 0)
    assert f"{path}:2: goal" in job.error  # skipped lines stay visible
    assert Procedure.objects.filter(source_example_id="job-1").exists()
    assert job.parameters["progress"]["records"] == 1


def test_it_runs_an_h2e_import_job(tmp_path: Path, django_capture_on_commit_callbacks: Any) -> None:
    tree = build_standard_tree(tmp_path / "tree")
    job = _created_job([tree], "h2e", skip_invalid=False, capture=django_capture_on_commit_callbacks)
    import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.error == ""
    assert (job.total, job.done, job.failed) == (9, 9, 0)
    assert job.progress_percent == 100.0
    assert Judgment.objects.count() == 36


def test_it_logs_and_returns_when_the_job_is_gone(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="judging.tasks"):
        run_import_job(987654321)
    assert "import job 987654321 no longer exists" in caplog.text
