"""Admin actions on mining runs: re-run from a stage (invalidating the later stages), start/resume."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from h2e_site.jobs.models import Job, JobStatus
from mining.config import run_config_from_mapping
from mining.job_kinds import MINE
from mining.models import MiningRun, StageOutcome
from mining.runs import mine_job_run, mining_run_create
from tests.factories import logged_in, make_user
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(llm_server: LoopbackLLM) -> MiningRun:
    for i, marker in enumerate(["", "BRAND", "FEWSTEPS"]):
        make_document(f"a-{i}", marker)
    llm_server.responder = canned_responder
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config(llm_server.base_url)), enqueue=False
    )
    mine_job_run(job_id=run.job_id or 0)
    return run


def test_it_reruns_a_run_from_a_stage_from_the_admin(
    run: MiningRun, boss: Client, django_capture_on_commit_callbacks
) -> None:
    url = reverse("admin:mining_miningrun_changelist")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = boss.post(url, {"action": "rerun_from_filter", "_selected_action": [run.pk]}, follow=True)
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.job is not None and run.job.status == JobStatus.QUEUED and run.job.kind == MINE
    assert len(callbacks) == 1  # the job is enqueued once the transaction commits
    stages = set(StageOutcome.objects.filter(run=run).values_list("stage", flat=True))
    assert stages == {"extraction", "prefilter"}


def test_it_refuses_to_start_a_run_whose_job_is_running(run: MiningRun, boss: Client) -> None:
    Job.objects.filter(pk=run.job_id).update(status=JobStatus.RUNNING)
    url = reverse("admin:mining_miningrun_changelist")
    response = boss.post(url, {"action": "start_or_resume", "_selected_action": [run.pk]}, follow=True)
    assert "cancel it first" in response.content.decode()
    assert Job.objects.filter(kind=MINE).count() == 1


def test_it_hides_run_actions_from_staff_without_the_run_permission(run: MiningRun) -> None:
    user = make_user(is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename="view_miningrun"))
    html = logged_in(user).get(reverse("admin:mining_miningrun_changelist")).content.decode()
    assert "rerun_from_filter" not in html
    assert "Funnel" in html


def test_it_validates_a_config_edited_in_the_admin(run: MiningRun, boss: Client) -> None:
    url = reverse("admin:mining_miningrun_change", args=[run.pk])
    bad = dict(run.config, stages={"default": {"model": "m", "backend": "nope"}})
    response = boss.post(url, {"name": run.name, "config": json.dumps(bad)})
    assert response.status_code == 200 and "unknown backend" in response.content.decode()
    good = dict(
        run.config, stages={**run.config["stages"], "filter": {"prompt_path": "prompts/mine_filter.txt"}}
    )
    response = boss.post(url, {"name": run.name, "config": json.dumps(good)})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.config["stages"]["filter"] == {"prompt_path": "prompts/mine_filter.txt"}
