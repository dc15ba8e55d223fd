"""A worker SIGKILLed in the middle of a mining run: a new worker resumes the MINE job (worker_ready ->
resume_orphaned_mine_jobs, the advisory lock died with the killed worker's session) and the run completes with
exactly one outcome per document and stage, nothing lost, only the requests in flight sent twice."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from h2e_site.jobs.loop import FLUSH_MAX
from h2e_site.jobs.models import Job, JobStatus
from mining.config import run_config_from_mapping
from mining.models import Procedure, StageOutcome
from mining.runs import mining_run_create
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document
from tests.worker_process import Worker, process_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

N_DOCUMENTS = 40
N_STAGES = 6
CONCURRENCY = 4
TIMEOUT_S = 120


def wait_until(predicate: Callable[[], bool], worker: Worker, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if predicate():
            return
        worker.assert_alive()
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}:\n{worker.log}")


def test_it_completes_a_mining_run_after_its_worker_is_killed(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL is not set (CI sets it)")
    llm_server.latency = 0.1
    llm_server.responder = canned_responder
    for i in range(N_DOCUMENTS):
        make_document(f"k-{i:03d}")
    config = loopback_config(llm_server.base_url)
    config["stages"]["default"]["max_concurrency"] = CONCURRENCY
    env = process_env(redis_url=redis_url, var_dir=tmp_path)
    first = Worker(env)
    second: Worker | None = None
    try:
        first.wait_until_ready()
        run = mining_run_create(config=run_config_from_mapping(config))  # enqueued at once (autocommit)
        total = N_DOCUMENTS * N_STAGES
        wait_until(lambda: StageOutcome.objects.count() >= total * 0.3, first, "30 % of the outcomes")
        first.kill()
        before = StageOutcome.objects.count()
        assert before <= total * 0.8, "the run went too fast to be killed in the middle"
        assert Job.objects.get(pk=run.job_id).status == JobStatus.RUNNING

        second = Worker(env)
        second.wait_until_ready()
        wait_until(lambda: Job.objects.get(pk=run.job_id).is_finished, second, "the mining job to finish")
    finally:
        first.stop()
        if second is not None:
            second.stop()

    job = Job.objects.get(pk=run.job_id)
    assert (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, N_DOCUMENTS, N_DOCUMENTS, 0)
    assert StageOutcome.objects.filter(run=run, passed=True).count() == total
    assert Procedure.objects.filter(mining_run=run).count() == N_DOCUMENTS
    assert f"mine job {job.pk} was left running by a worker that died" in second.log
    llm_requests = N_DOCUMENTS * (N_STAGES - 1)
    assert llm_requests <= len(llm_server.completion_requests) <= llm_requests + CONCURRENCY + FLUSH_MAX
