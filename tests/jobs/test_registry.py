"""The core knows no app: every kind of job is registered by its app, and the Jobs pages, the API, resume and
retry read the registry."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.module_loading import import_string

from annotation.base.job_kinds import (
    CALIBRATION_ROUND,
    CLASSIFY_STEPS,
    FAILURE_PATTERNS,
    PROLIFIC_BONUSES,
    PROLIFIC_REVIEW,
    PROLIFIC_SYNC,
)
from goal_step.job_kinds import ANSWER_TASKS, BUILD_TASKS
from h2e_site.embeddings.job_kinds import EMBED
from h2e_site.jobs.models import JobStatus
from h2e_site.jobs.registry import ByPath, TaskName, job_type_for, job_types
from h2e_site.jobs.services import job_can_retry, job_retry_failed, resume_orphaned_jobs
from h2e_site.jobs.views import job_lines
from judging.job_kinds import GENERATE, IMPORT, JUDGE, JUDGE_PROBE, PAIRWISE_JUDGE
from mining.job_kinds import MINE
from mining.models import MiningRun
from tests.factories import make_job

pytestmark = pytest.mark.django_db


def test_it_has_a_registered_task_for_every_kind_the_apps_run() -> None:
    registered = {job_type.kind: job_type.task.name for job_type in job_types()}
    assert registered == {
        IMPORT: "judging.run_import_job",
        GENERATE: "judging.run_generate_job",
        JUDGE: "judging.run_judge_job",
        PAIRWISE_JUDGE: "judging.run_pairwise_judge_job",
        JUDGE_PROBE: "judging.run_judge_probe_job",
        MINE: "mining.run_mine_job",
        CLASSIFY_STEPS: "annotation.run_classify_job",
        BUILD_TASKS: "mining.run_build_tasks_job",
        ANSWER_TASKS: "mining.run_answer_tasks_job",
        EMBED: "embeddings.run_embed_job",
        FAILURE_PATTERNS: "annotation.run_failure_patterns_job",
        PROLIFIC_SYNC: "annotation.run_prolific_sync_job",
        PROLIFIC_REVIEW: "annotation.run_prolific_review_job",
        PROLIFIC_BONUSES: "annotation.run_prolific_bonuses_job",
        CALIBRATION_ROUND: "annotation.run_calibration_round_job",
    }
    assert not job_type_for(IMPORT).resumable and job_type_for(MINE).resumable
    with pytest.raises(LookupError, match="export"):
        job_type_for("export")  # a kind no app registers


def test_it_retries_only_kinds_that_say_how() -> None:
    imported = make_job(kind=IMPORT, status=JobStatus.FAILED, failed=2)
    orphan_kind = make_job(kind="export", status=JobStatus.FAILED, failed=2)
    assert not job_can_retry(imported) and not job_can_retry(orphan_kind)
    with pytest.raises(ValueError, match="cannot be retried"):
        job_retry_failed(job=imported)


def test_it_leaves_running_import_jobs_to_their_own_recovery() -> None:
    make_job(kind=IMPORT, status=JobStatus.RUNNING)
    assert resume_orphaned_jobs() == []


def test_it_describes_a_mine_job_by_its_run() -> None:
    job = make_job(kind=MINE)
    run = MiningRun.objects.create(name="tea run", config={}, job=job)
    job.parameters = {"run": run.pk}
    job.save()
    (line,) = job_lines([job])
    (subject,) = line.description.subjects
    assert subject.role == "mining run" and subject.name == "tea run"
    assert subject.url == reverse("mine:run", args=[run.pk])


def test_it_refuses_an_unknown_kind_on_the_api_naming_it(admin_client: Client) -> None:
    response = admin_client.post("/api/jobs/", {"kind": "export"}, content_type="application/json")
    assert response.status_code == 400
    assert "'export' is not a kind of job started here" in response.json()["kind"][0]


def test_it_lists_how_to_start_each_kind_on_the_jobs_page(admin_client: Client) -> None:
    html = admin_client.get(reverse("jobs:job_list")).content.decode()
    for hint in ("manage.py generate / judge", "manage.py mine", "manage.py import_h2e"):
        assert hint in html
    assert reverse("admin:judging_import") in html


def test_every_kind_names_a_task_and_functions_that_exist() -> None:
    """Kinds are registered by name (nothing that runs a job is imported at start-up): each named task is
    defined by a tasks module, and each function named by a dotted path imports."""
    for job_type in job_types():
        task = job_type.task.task() if isinstance(job_type.task, TaskName) else job_type.task
        assert task.name == job_type.task.name
        for function in (job_type.retry, job_type.api_create):
            if isinstance(function, ByPath):
                assert callable(import_string(function.path)), function.path
