"""POST /api/mining/runs/<id>/start/ and /rerun/: the run permission, conflicts, validation."""

from __future__ import annotations

import pytest
from django.test import Client

from h2e_site.jobs.models import Job, JobStatus
from mining.config import run_config_from_mapping
from mining.models import MiningRun, StageOutcome
from mining.runs import mine_job_run, mining_run_create
from tests.factories import make_user
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(llm_server: LoopbackLLM) -> MiningRun:
    for i, marker in enumerate(["", "BRAND"]):
        make_document(f"api-{i}", marker)
    llm_server.responder = canned_responder
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config(llm_server.base_url)), enqueue=False
    )
    mine_job_run(job_id=run.job_id or 0)
    return run


def test_it_reruns_a_stage_through_the_api(
    run: MiningRun, runner: Client, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = runner.post(
            f"/api/mining/runs/{run.pk}/rerun/", {"stage": "filter"}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == JobStatus.QUEUED and job.parameters["run"] == run.pk
    assert set(StageOutcome.objects.filter(run=run).values_list("stage", flat=True)) == {
        "extraction",
        "prefilter",
    }


def test_it_answers_409_while_the_run_has_a_job_running(run: MiningRun, runner: Client) -> None:
    Job.objects.filter(pk=run.job_id).update(status=JobStatus.RUNNING)
    response = runner.post(f"/api/mining/runs/{run.pk}/start/")
    assert response.status_code == 409 and "cancel it first" in response.json()["detail"]
    rerun = runner.post(
        f"/api/mining/runs/{run.pk}/rerun/", {"stage": "filter"}, content_type="application/json"
    )
    assert rerun.status_code == 409
    assert StageOutcome.objects.filter(run=run, stage="filter").exists()


def test_it_validates_the_stage_and_the_config(run: MiningRun, runner: Client) -> None:
    url = f"/api/mining/runs/{run.pk}/rerun/"
    assert runner.post(url, {"stage": "nope"}, content_type="application/json").status_code == 400
    bad = {"stage": "filter", "config": {**run.config, "prefilter": {"min_steps": 0}}}
    response = runner.post(url, bad, content_type="application/json")
    assert response.status_code == 400 and "min_steps" in response.json()["config"]


def test_it_needs_the_run_permission_and_post(run: MiningRun, runner: Client) -> None:
    staff = Client()
    staff.force_login(make_user(is_staff=True))
    assert staff.post(f"/api/mining/runs/{run.pk}/start/").status_code == 403
    assert staff.get(f"/api/mining/runs/{run.pk}/funnel/").status_code == 200
    assert runner.get(f"/api/mining/runs/{run.pk}/start/").status_code == 405
