"""Admin run actions: generate, judge with..., judge missing, re-judge, cancel, retry; through the real
services of judging/runs.py (the jobs stay queued here: the worker runs are tested with the services)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from h2e_site.jobs.models import Job, JobStatus
from judging import judge_files
from judging.job_kinds import GENERATE, JUDGE
from judging.judge_jobs import judge_job_create
from judging.models import Generation, Judge, JudgeError, Judgment
from tests.factories import (
    make_generation,
    make_generator,
    make_job,
    make_judgment,
    make_procedure,
    make_user,
)

from .runnable import make_runnable_generator, make_runnable_judge

pytestmark = pytest.mark.django_db


def changelist(model: str) -> str:
    """The admin list of a judging model, or of jobs.job ("job": the core's Job admin)."""
    app = "jobs" if model == "job" else "judging"
    return reverse(f"admin:{app}_{model}_changelist")


def act(client: Client, model: str, action: str, objects: list[Any], **data: Any) -> Any:
    payload = {"action": action, ACTION_CHECKBOX_NAME: [o.pk for o in objects], **data}
    return client.post(changelist(model), payload)


def messages_of(response: Any, client: Client) -> list[str]:
    return [str(m) for m in response.wsgi_request._messages]


@pytest.fixture
def bench() -> list[Any]:
    return [make_procedure(goal=f"Goal {i}") for i in range(4)] + [make_procedure(split="train")]


def test_it_asks_split_and_limit_before_generating(admin_client: Client, bench: list[Any]) -> None:
    generator = make_runnable_generator()
    response = act(admin_client, "generator", "generate_l2", [generator])
    html = response.content.decode()
    assert response.status_code == 200
    assert 'name="split"' in html and 'name="limit"' in html and 'value="generate_l2"' in html
    assert not Job.objects.exists()


def test_it_starts_a_generate_job_and_redirects_to_it(admin_client: Client, bench: list[Any]) -> None:
    generator = make_runnable_generator()
    response = act(
        admin_client, "generator", "generate_l2", [generator], apply="yes", split="bench", limit="3"
    )
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    assert (job.kind, job.status, job.total) == (GENERATE, JobStatus.QUEUED, 3)
    assert job.parameters["generator"] == generator.pk and job.parameters["split"] == "bench"
    assert job.parameters["items"] == [p.pk for p in bench[:3]]
    assert job.created_by is not None and job.created_by.username == "admin"
    assert f"Started generate job #{job.pk} (3 item(s))." in messages_of(response, admin_client)


def test_it_generates_for_every_split_when_asked(admin_client: Client, bench: list[Any]) -> None:
    generator = make_runnable_generator()
    act(admin_client, "generator", "generate_l2", [generator], apply="yes", split="", limit="")
    assert Job.objects.get().total == 5


def test_it_rejects_a_bad_limit_on_the_form(admin_client: Client, bench: list[Any]) -> None:
    generator = make_runnable_generator()
    response = act(
        admin_client, "generator", "generate_l2", [generator], apply="yes", split="bench", limit="0"
    )
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    assert not Job.objects.exists()


def test_it_refuses_to_run_an_imported_generator(admin_client: Client, bench: list[Any]) -> None:
    imported = make_generator(model="imported-model")
    response = act(admin_client, "generator", "generate_l2", [imported], apply="yes", split="bench")
    assert response.status_code == 302 and response["Location"] == changelist("generator")
    assert not Job.objects.exists()
    (message,) = messages_of(response, admin_client)
    assert "imported" in message and "imported-model" in message


def test_it_offers_runnable_judges_and_config_files(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)
    (tmp_path / "loopback.yaml").write_text("model: loopback/judge-b\nbackend: openai\nprovider: openai\n")
    runnable = make_runnable_judge()
    demo = make_runnable_judge(model="loopback/smol", is_demo_model=True)
    imported = Judge.objects.create(judge_id="f" * 12, model="imported/judge")
    response = act(admin_client, "generator", "judge_with", [make_runnable_generator()])
    html = response.content.decode()
    assert f'value="judge:{runnable.pk}"' in html
    assert f'value="judge:{demo.pk}"' in html and "demo model, judgments not meaningful" in html
    assert f'value="judge:{imported.pk}"' not in html  # no config: cannot run
    assert 'value="file:loopback.yaml"' in html and "configs/judges/loopback.yaml" in html


def test_it_judges_each_selected_generator_with_the_chosen_judge(admin_client: Client) -> None:
    judge = make_runnable_judge()
    gen_a, gen_b = make_runnable_generator(model="m/a"), make_runnable_generator(model="m/b")
    judged = make_generation(generator=gen_a)
    make_judgment(generation=judged, judge=judge)
    todo = [
        make_generation(generator=gen_a),
        make_generation(generator=gen_b),
        make_generation(generator=gen_b),
    ]
    response = act(
        admin_client, "generator", "judge_with", [gen_a, gen_b], apply="yes", judge=f"judge:{judge.pk}"
    )
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job_list")
    jobs = {job.parameters["generator"]: job for job in Job.objects.filter(kind=JUDGE)}
    assert set(jobs) == {gen_a.pk, gen_b.pk}
    assert jobs[gen_a.pk].parameters["items"] == [todo[0].pk]
    assert jobs[gen_b.pk].parameters["items"] == [todo[1].pk, todo[2].pk]
    assert {job.parameters["mode"] for job in jobs.values()} == {"missing"}


def test_it_makes_a_judge_row_from_a_config_file(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)
    (tmp_path / "b.yaml").write_text("model: loopback/judge-b\nbackend: openai\nprovider: openai\n")
    generation = make_generation(generator=make_runnable_generator())
    act(admin_client, "generator", "judge_with", [generation.generator], apply="yes", judge="file:b.yaml")
    judge = Judge.objects.get(model="loopback/judge-b")
    job = Job.objects.get()
    assert job.parameters["judge"] == judge.pk and job.parameters["items"] == [generation.pk]


def test_it_names_the_file_of_a_broken_judge_config(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)
    (tmp_path / "broken.yaml").write_text("model: x\nbackend: nope\n")
    generator = make_runnable_generator()
    response = act(
        admin_client, "generator", "judge_with", [generator], apply="yes", judge="file:broken.yaml"
    )
    html = response.content.decode()
    assert response.status_code == 200 and "broken.yaml: backend: unknown backend" in html
    assert not Job.objects.exists()


def test_it_judges_all_generators_missing_generations(admin_client: Client) -> None:
    judge = make_runnable_judge()
    gen_a, gen_b, gen_done = (make_runnable_generator(model=f"m/{x}") for x in "abc")
    a = make_generation(generator=gen_a)
    b = make_generation(generator=gen_b)
    make_judgment(generation=make_generation(generator=gen_done), judge=judge)
    failed = make_generation(generator=gen_done)
    Generation.objects.filter(pk=failed.pk).update(error="HTTP 500")  # no L2: never judged
    page = act(admin_client, "judge", "judge_all_missing", [judge])
    html = page.content.decode()
    assert page.status_code == 200 and not Job.objects.exists()  # first, what will happen
    assert "Yes, start 2 judge jobs" in html and "1 request to" in html and "no price is configured" in html
    response = act(admin_client, "judge", "judge_all_missing", [judge], apply="yes")
    assert response.status_code == 302
    items = {job.parameters["generator"]: job.parameters["items"] for job in Job.objects.all()}
    assert items == {gen_a.pk: [a.pk], gen_b.pk: [b.pk]}


def test_it_says_when_a_judge_has_nothing_missing(admin_client: Client) -> None:
    judge = make_runnable_judge()
    make_judgment(generation=make_generation(generator=make_runnable_generator()), judge=judge)
    response = act(admin_client, "judge", "judge_all_missing", [judge])
    assert not Job.objects.exists()
    assert "Nothing to judge" in messages_of(response, admin_client)[0]


def test_it_rejudges_the_parse_failures_among_the_selected_judgments(admin_client: Client) -> None:
    judge, other = make_runnable_judge(), make_runnable_judge(model="loopback/other")
    generator = make_runnable_generator()
    bad = make_judgment(generation=make_generation(generator=generator), judge=judge, parse_failed=True)
    good = make_judgment(generation=make_generation(generator=generator), judge=judge)
    other_bad = make_judgment(generation=bad.generation, judge=other, parse_failed=True)
    page = act(admin_client, "judgment", "rejudge_parse_failures", [bad, good, other_bad])
    html = page.content.decode()
    assert page.status_code == 200 and not Job.objects.exists()  # first, what will happen
    assert f"Judge {judge.judge_id}: 1 request" in html and f"Judge {other.judge_id}: 1 request" in html
    response = act(admin_client, "judgment", "rejudge_parse_failures", [bad, good, other_bad], apply="yes")
    assert response.status_code == 302
    jobs = {job.parameters["judge"]: job for job in Job.objects.all()}
    assert jobs[judge.pk].parameters["items"] == [bad.generation_id]
    assert jobs[judge.pk].parameters["mode"] == "parse_failed"
    assert jobs[other.pk].parameters["items"] == [other_bad.generation_id]


def test_it_confirms_before_replacing_judgments(admin_client: Client) -> None:
    judge = make_runnable_judge()
    judgments = [make_judgment(generation=make_generation(), judge=judge) for _ in range(2)]
    page = act(admin_client, "judgment", "rejudge_replace", judgments)
    html = page.content.decode()
    assert page.status_code == 200 and "is replaced by a new verdict" in html
    assert 'value="rejudge_replace"' in html and not Job.objects.exists()
    response = act(admin_client, "judgment", "rejudge_replace", judgments, apply="yes")
    job = Job.objects.get()
    assert response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    assert job.parameters["mode"] == "replace"
    assert job.parameters["items"] == sorted(j.generation_id for j in judgments)
    assert Judgment.objects.count() == 2  # replaced by the worker, not deleted now


def test_it_shows_the_demo_label_in_the_judgment_list(admin_client: Client) -> None:
    make_judgment(judge=make_runnable_judge(is_demo_model=True))
    html = admin_client.get(changelist("judgment")).content.decode()
    assert "(demo model)" in html


def test_it_cancels_unfinished_jobs(admin_client: Client) -> None:
    running, done = make_job(status=JobStatus.RUNNING), make_job(status=JobStatus.SUCCEEDED)
    page = act(admin_client, "job", "cancel_jobs", [running, done])
    assert page.status_code == 200 and "Yes, cancel 1 job" in page.content.decode()
    assert Job.objects.get(pk=running.pk).status == JobStatus.RUNNING  # nothing happens before the "yes"
    response = act(admin_client, "job", "cancel_jobs", [running, done], apply="yes")
    assert response["Location"] == reverse("jobs:job_detail", args=[running.pk])
    running.refresh_from_db()
    done.refresh_from_db()
    assert running.status == JobStatus.CANCELLED and running.finished_at is not None
    assert done.status == JobStatus.SUCCEEDED


def test_it_retries_the_failed_items_of_a_judge_job(admin_client: Client) -> None:
    judge = make_runnable_judge()
    generator = make_runnable_generator()
    generations = [make_generation(generator=generator) for _ in range(3)]
    job = judge_job_create(judge=judge, generator=generator)
    JudgeError.objects.create(judge=judge, generation=generations[1], job=job, error="HTTP 500", attempts=6)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, done=2, failed=1)
    response = act(admin_client, "job", "retry_failed_items", [job])
    retry = Job.objects.exclude(pk=job.pk).get()
    assert response["Location"] == reverse("jobs:job_detail", args=[retry.pk])
    assert retry.parameters["items"] == [generations[1].pk]


def test_it_hides_run_actions_from_staff_without_the_permission(client: Client, bench: list[Any]) -> None:
    staff = make_user(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_generator", "view_job"]))
    client.force_login(staff)
    generator = make_runnable_generator()
    html = client.get(changelist("generator")).content.decode()
    assert "generate_l2" not in html
    act(client, "generator", "generate_l2", [generator], apply="yes", split="bench")
    assert not Job.objects.exists()


def test_it_lets_staff_with_the_add_job_permission_run(client: Client, bench: list[Any]) -> None:
    staff = make_user(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_generator", "add_job"]))
    client.force_login(staff)
    generator = make_runnable_generator()
    assert "generate_l2" in client.get(changelist("generator")).content.decode()
    act(client, "generator", "generate_l2", [generator], apply="yes", split="bench")
    assert Job.objects.get().created_by == staff


def test_it_offers_every_shipped_judge_config_and_each_one_loads(admin_client: Client) -> None:
    files = judge_files.judge_config_files()
    assert {p.name for p in files} >= {"smollm2-local.yaml"}
    html = act(admin_client, "generator", "judge_with", [make_runnable_generator()]).content.decode()
    for path in files:
        assert f'value="file:{path.name}"' in html
        judge = judge_files.judge_from_choice(f"file:{path.name}")
        assert judge.config and judge.judge_id
    smol = judge_files.judge_from_choice("file:smollm2-local.yaml")
    assert smol.is_demo_model


def test_it_asks_to_choose_a_judge(admin_client: Client) -> None:
    make_runnable_judge()
    generator = make_runnable_generator()
    response = act(admin_client, "generator", "judge_with", [generator], apply="yes", judge="")
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert not Job.objects.exists()
