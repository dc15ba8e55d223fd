"""POST /api/jobs/ (generate, judge), cancel and retry, progress/ETA in job reads, permissions, schema."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from h2e_site.jobs.models import Job, JobStatus
from judging.job_kinds import GENERATE, JUDGE
from judging.judge_jobs import judge_job_create
from judging.models import JudgeError, Judgment
from tests.factories import (
    make_generation,
    make_generator,
    make_job,
    make_judgment,
    make_procedure,
    make_user,
)
from tests.judging.runnable import make_runnable_generator, make_runnable_judge

pytestmark = pytest.mark.django_db

JOBS = "/api/jobs/"


def post(client: Client, url: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(url, body or {}, content_type="application/json")


def test_it_routes_jobs_where_the_brief_says() -> None:
    assert reverse("api:job-list") == JOBS
    assert reverse("api:job-cancel", args=[7]) == "/api/jobs/7/cancel/"


def test_it_starts_a_generate_job(runner: Client) -> None:
    procedures = [make_procedure() for _ in range(3)]
    generator = make_runnable_generator()
    response = post(runner, JOBS, {"kind": "generate", "generator_id": generator.generator_id, "limit": 2})
    assert response.status_code == 201, response.content
    body = response.json()
    job = Job.objects.get(pk=body["id"])
    assert response["Location"] == f"{JOBS}{job.pk}/"
    assert (job.kind, job.status, job.total) == (GENERATE, JobStatus.QUEUED, 2)
    assert job.parameters["items"] == [p.pk for p in procedures[:2]]
    assert body["generator_id"] == generator.generator_id and body["judge_id"] is None
    assert body["status"] == "queued" and body["total"] == 2 and body["eta_seconds"] is None
    assert "items" not in body["parameters"] and body["parameters"]["split"] == "bench"


def test_it_starts_a_judge_job_for_a_generator(runner: Client) -> None:
    generator, judge = make_runnable_generator(), make_runnable_judge()
    generations = [make_generation(generator=generator) for _ in range(2)]
    response = post(
        runner,
        JOBS,
        {"kind": "judge", "judge_id": judge.judge_id, "generator_id": generator.generator_id},
    )
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.kind == JUDGE and job.parameters["mode"] == "missing"
    assert job.parameters["items"] == [g.pk for g in generations]


def test_it_rejudges_given_generations_in_replace_mode(runner: Client) -> None:
    judge = make_runnable_judge()
    judgment = make_judgment(judge=judge)
    make_judgment(judge=judge)
    body = {"kind": "judge", "judge_id": judge.judge_id, "generation_ids": [judgment.generation_id]}
    response = post(runner, JOBS, {**body, "mode": "replace"})
    job = Job.objects.get(pk=response.json()["id"])
    assert job.parameters["items"] == [judgment.generation_id] and job.parameters["mode"] == "replace"
    assert Judgment.objects.count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "kind"),
        ({"kind": "translate"}, "kind"),
        ({"kind": "generate"}, "generator_id"),
        ({"kind": "generate", "generator_id": "nope"}, "generator_id"),
        ({"kind": "judge", "generator_id": None}, "judge_id"),
        ({"kind": "judge", "judge_id": "nope", "generation_ids": [1]}, "judge_id"),
        ({"kind": "generate", "generator_id": "G", "limit": 0}, "limit"),
        ({"kind": "generate", "generator_id": "G", "split": "dev"}, "split"),
        ({"kind": "judge", "judge_id": "J", "generation_ids": [1], "mode": "all"}, "mode"),
        ({"kind": "judge", "judge_id": "J"}, "generator_id"),
    ],
)
def test_it_names_the_bad_field(runner: Client, body: dict[str, Any], field: str) -> None:
    generator, judge = make_runnable_generator(), make_runnable_judge()
    body = {
        k: {"G": generator.generator_id, "J": judge.judge_id}.get(v, v) if isinstance(v, str) else v
        for k, v in body.items()
    }
    response = post(runner, JOBS, body)
    assert response.status_code == 400
    assert field in response.json()
    assert not Job.objects.exists()


def test_it_refuses_to_run_an_imported_generator(runner: Client) -> None:
    make_procedure()
    imported = make_generator()
    response = post(runner, JOBS, {"kind": "generate", "generator_id": imported.generator_id})
    assert response.status_code == 400
    assert "imported" in response.json()["detail"]
    assert not Job.objects.exists()


def test_it_refuses_starting_jobs_without_the_permission(client: Client) -> None:
    generator = make_runnable_generator()
    client.force_login(make_user(is_staff=True))
    body = {"kind": "generate", "generator_id": generator.generator_id}
    assert post(client, JOBS, body).status_code == 403
    assert client.get(JOBS).status_code == 200  # reading needs staff only
    job = make_job(status=JobStatus.RUNNING)
    assert post(client, reverse("api:job-cancel", args=[job.pk])).status_code == 403
    assert not Job.objects.exclude(pk=job.pk).exists()


def test_it_refuses_outsiders(client: Client) -> None:
    job = make_job()
    assert post(client, JOBS, {"kind": "generate"}).status_code in {401, 403}
    assert post(client, reverse("api:job-cancel", args=[job.pk])).status_code in {401, 403}
    client.force_login(make_user(is_staff=False))
    assert post(client, JOBS, {"kind": "generate"}).status_code == 403
    assert client.get(reverse("api:job-detail", args=[job.pk])).status_code == 403


def test_it_rejects_wrong_methods(admin_client: Client) -> None:
    job = make_job()
    detail = reverse("api:job-detail", args=[job.pk])
    assert admin_client.put(detail, {}, content_type="application/json").status_code == 405
    assert admin_client.delete(detail).status_code == 405
    assert admin_client.get(reverse("api:job-cancel", args=[job.pk])).status_code == 405
    assert admin_client.get(reverse("api:job-retry", args=[job.pk])).status_code == 405
    assert Job.objects.filter(pk=job.pk).exists()


def test_it_cancels_a_running_job(runner: Client) -> None:
    job = make_job(status=JobStatus.RUNNING)
    response = post(runner, reverse("api:job-cancel", args=[job.pk]))
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled" and response.json()["is_finished"] is True
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_it_says_conflict_when_cancelling_a_finished_job(runner: Client) -> None:
    job = make_job(status=JobStatus.SUCCEEDED)
    response = post(runner, reverse("api:job-cancel", args=[job.pk]))
    assert response.status_code == 409 and "already succeeded" in response.json()["detail"]
    assert post(runner, reverse("api:job-cancel", args=[job.pk + 99])).status_code == 404


def test_it_retries_failed_judge_items(runner: Client) -> None:
    judge, generator = make_runnable_judge(), make_runnable_generator()
    generations = [make_generation(generator=generator) for _ in range(2)]
    job = judge_job_create(judge=judge, generator=generator)
    JudgeError.objects.create(judge=judge, generation=generations[0], job=job, error="timeout", attempts=6)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, done=1, failed=1)
    response = post(runner, reverse("api:job-retry", args=[job.pk]))
    assert response.status_code == 201
    retry = Job.objects.get(pk=response.json()["id"])
    assert retry.parameters["items"] == [generations[0].pk] and retry.parameters["mode"] == "parse_failed"
    clean = make_job(kind=JUDGE, status=JobStatus.SUCCEEDED, failed=0)
    assert post(runner, reverse("api:job-retry", args=[clean.pk])).status_code == 409


def test_it_reports_progress_elapsed_and_eta_of_a_running_job(admin_client: Client) -> None:
    job = make_job(status=JobStatus.RUNNING, total=100, done=20, failed=5)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - datetime.timedelta(seconds=50))
    body = admin_client.get(reverse("api:job-detail", args=[job.pk])).json()
    assert body["progress_percent"] == 25.0
    assert body["elapsed_seconds"] == pytest.approx(50, abs=5)
    # 25 items in 50 s: 75 left take about 150 s
    assert body["eta_seconds"] == pytest.approx(150, abs=20)


def test_it_stops_the_clock_of_a_finished_job(admin_client: Client) -> None:
    job = make_job(status=JobStatus.SUCCEEDED, total=4, done=4)
    start = timezone.now() - datetime.timedelta(hours=2)
    Job.objects.filter(pk=job.pk).update(started_at=start, finished_at=start + datetime.timedelta(seconds=30))
    body = admin_client.get(reverse("api:job-detail", args=[job.pk])).json()
    assert body["elapsed_seconds"] == 30.0 and body["eta_seconds"] is None


def test_it_lists_jobs_in_a_fixed_number_of_queries(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    for _ in range(5):
        make_job(status=JobStatus.RUNNING, created_by=make_user())
    with django_assert_max_num_queries(6):
        rows = admin_client.get(JOBS).json()["results"]
    assert len(rows) == 5
