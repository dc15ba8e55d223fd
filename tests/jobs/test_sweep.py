"""A running job whose Celery task is gone while its worker lives on (cancelled, as Celery 6 does on a lost
broker connection, or its pool process killed) is picked up again by the workers' stale-job sweep, without
a worker restart; and the setting that keeps tasks running through a lost connection is pinned."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from h2e_site.celery import app
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import jobs_sweep_stale
from h2e_site.llm.config import config_from_mapping
from judging.configs import judge_for_config
from judging.judge_jobs import judge_job_create
from judging.models import Judgment
from tests.factories import make_generation, make_generator, make_job, make_procedure
from tests.llm_server import LoopbackLLM
from tests.worker_process import Worker, process_env

N_ITEMS = 60
TIMEOUT_SECONDS = 120


def test_it_pins_the_setting_that_keeps_tasks_running_through_a_lost_broker() -> None:
    assert settings.CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS is False
    assert app.conf.worker_cancel_long_running_tasks_on_connection_loss is False


@pytest.mark.django_db
def test_it_leaves_a_job_that_is_still_beating_or_still_locked() -> None:
    fresh = make_job(status=JobStatus.RUNNING, kind="judge")  # updated just now: still beating
    assert jobs_sweep_stale(stale_after=60) == []
    Job.objects.filter(pk=fresh.pk).update(updated_at=fresh.updated_at.replace(year=2000))
    make_job(status=JobStatus.RUNNING, kind="import")  # not resumable: imports restart by hand
    # a stale, lock-free judge job is picked up again (here there is no worker: its message is queued)
    assert jobs_sweep_stale(stale_after=60) == [fresh.pk]


def _wait(predicate: Any, worker: Worker, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if predicate():
            return
        worker.assert_alive()
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}:\n{worker.log}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_runs_again_a_job_whose_task_was_cancelled_under_a_live_worker(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL is not set (CI sets it)")
    llm_server.latency = 0.15
    generator = make_generator()
    for i in range(N_ITEMS):
        make_generation(generator=generator, procedure=make_procedure(goal=f"Goal {i}"))
    config = {"model": "loopback-model", "backend": "openai", "provider": "loopback", "max_concurrency": 2,
              "base_url": llm_server.base_url, "max_requests_per_minute": 100_000,
              "max_tokens_per_minute": 100_000_000}  # fmt: skip
    judge = judge_for_config(config_from_mapping(config, role="judge"))
    env = process_env(
        redis_url=redis_url, var_dir=tmp_path, H2E_JOB_SWEEP_SECONDS="1", H2E_JOB_STALE_SECONDS="3"
    )
    worker = Worker(env)
    try:
        worker.wait_until_ready()
        job = judge_job_create(judge=judge, generator=generator)
        _wait(lambda: Judgment.objects.count() >= 5, worker, "the first judgments")
        task_id = Job.objects.get(pk=job.pk).celery_task_id
        app.control.revoke(task_id, terminate=True, signal="SIGKILL")  # the task is gone; the worker lives
        _wait(lambda: "Task h2e_site" in worker.log or "Terminating" in worker.log or "SIGKILL" in worker.log,
              worker, "the task's termination")  # fmt: skip
        assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
        _wait(lambda: Job.objects.get(pk=job.pk).is_finished, worker, f"job {job.pk} to finish")
        worker.assert_alive()  # the same worker, never restarted
    finally:
        worker.stop()
    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, N_ITEMS, 0), job.error
    assert Judgment.objects.count() == N_ITEMS == Judgment.objects.values("generation_id").distinct().count()
    assert f"job {job.pk} has had no runner for" in worker.log
