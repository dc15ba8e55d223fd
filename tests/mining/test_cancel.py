"""Cancelling a mining job stops it within about a second; the run is marked cancelled and can be resumed."""

from __future__ import annotations

import threading

import pytest

from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import job_cancel
from mining.config import run_config_from_mapping
from mining.models import RunStatus, StageOutcome
from mining.runs import mine_job_run, mining_run_create, mining_run_start
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_stops_when_its_job_is_cancelled_and_resumes_later(llm_server: LoopbackLLM) -> None:
    for i in range(12):
        make_document(f"c-{i:02d}")
    llm_server.responder = canned_responder
    llm_server.latency = 0.3
    config = loopback_config(llm_server.base_url)
    config["stages"]["default"]["max_concurrency"] = 1
    run = mining_run_create(config=run_config_from_mapping(config), enqueue=False)
    job = Job.objects.get(pk=run.job_id)
    timer = threading.Timer(1.2, lambda: job_cancel(job=Job.objects.get(pk=job.pk)))
    timer.start()
    try:
        mine_job_run(job_id=job.pk)
    finally:
        timer.cancel()
    job.refresh_from_db()
    run.refresh_from_db()
    assert (job.status, run.status) == (JobStatus.CANCELLED, RunStatus.CANCELLED)
    assert 0 < StageOutcome.objects.filter(run=run, stage="extraction").count() < 12

    llm_server.latency = 0.0
    resumed = mining_run_start(run=run, enqueue=False)
    mine_job_run(job_id=resumed.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert StageOutcome.objects.filter(run=run, stage="final_filter", passed=True).count() == 12
