"""A worker SIGKILLed in the middle of a 200-item judge job: after a new worker starts, the job completes with
exactly 200 judgments, none duplicated, and its counts right.

How it recovers: the killed worker never acks the task message (acks_late), and Redis would redeliver it
only after the transport's visibility_timeout (an hour by default). The new worker does not wait for that:
on startup (worker_ready) it re-enqueues every RUNNING generate/judge job whose PostgreSQL advisory lock is
free, i.e. whose runner's database session died with it (h2e_site.jobs.services.resume_orphaned_jobs). The
resumed run judges only what has no judgment yet and recounts done/failed from the rows.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from h2e_site.jobs.loop import FLUSH_MAX
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.llm.config import config_from_mapping
from judging.configs import judge_for_config
from judging.judge_jobs import judge_job_create
from judging.models import Judgment
from tests.factories import make_generation, make_generator, make_procedure
from tests.llm_server import LoopbackLLM
from tests.worker_process import Worker, process_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

N_ITEMS = 200
CONCURRENCY = 8
LATENCY_S = 0.1
JOB_TIMEOUT_SECONDS = 120


def wait_until(predicate, worker: Worker, what: str, timeout: float = JOB_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        worker.assert_alive()
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}:\n{worker.log}")


def test_it_completes_a_judge_job_after_its_worker_is_killed(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL is not set (CI sets it)")
    llm_server.latency = LATENCY_S
    generator = make_generator()
    for i in range(N_ITEMS):
        make_generation(generator=generator, procedure=make_procedure(goal=f"Goal {i}"))
    judge = judge_for_config(
        config_from_mapping(
            {
                "model": "loopback-model",
                "backend": "openai",
                "provider": "loopback",
                "base_url": llm_server.base_url,
                "max_concurrency": CONCURRENCY,
                "max_requests_per_minute": 100_000,
                "max_tokens_per_minute": 100_000_000,
            },
            role="judge",
        )
    )
    env = process_env(redis_url=redis_url, var_dir=tmp_path)
    first = Worker(env)
    second: Worker | None = None
    try:
        first.wait_until_ready()
        job = judge_job_create(judge=judge, generator=generator)  # enqueued at once (autocommit)
        wait_until(lambda: Judgment.objects.count() >= N_ITEMS * 0.3, first, "30 % of the judgments")
        first.kill()
        judged_before_kill = Judgment.objects.count()
        assert judged_before_kill <= N_ITEMS * 0.7, "the job went too fast to be killed in the middle"
        job.refresh_from_db()
        assert job.status == JobStatus.RUNNING

        second = Worker(env)
        second.wait_until_ready()
        wait_until(lambda: Job.objects.get(pk=job.pk).is_finished, second, f"job {job.pk} to finish")
    finally:
        first.stop()
        if second is not None:
            second.stop()

    job.refresh_from_db()
    assert (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, N_ITEMS, N_ITEMS, 0), (
        job.error
    )
    assert Judgment.objects.count() == N_ITEMS
    assert Judgment.objects.values("generation_id").distinct().count() == N_ITEMS
    assert f"job {job.pk} was left running by a worker that died" in second.log
    # Only what was lost with the worker was sent twice: the requests in flight at the kill and the results
    # received but not yet written (at most FLUSH_MAX, held at most FLUSH_S).
    assert N_ITEMS <= len(llm_server.completion_requests) <= N_ITEMS + CONCURRENCY + FLUSH_MAX
