"""Moving Job from the judging app into the core (h2e_site.jobs) keeps every row: run on a database that
holds jobs of every kind, a mining run pointing at one, and a user allowed to run jobs, migrated for real."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

# django-test-migrations applies the full plan up to the last of these; annotation is left out since its
# later migrations (0004: step types, on jobs 0003) put the whole app after the jobs move in the plan.
BEFORE = [
    ("judging", "0003_failure_browser_indexes"),
    ("mining", "0004_how2mine"),
]
AFTER = [
    ("jobs", "0002_own_table"),
    ("judging", "0005_prompt_text"),
    ("mining", "0005_run_job_in_core"),
]
KINDS = ["import", "generate", "judge", "mine", "export"]
STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"]


def _tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def _old_jobs(apps: Any) -> tuple[list[dict[str, Any]], int, int]:
    """Jobs of every kind and status, a mining run on the mine job, a user with judging's add_job."""
    user = apps.get_model("auth", "User").objects.create(username="runner", is_staff=True)
    Job = apps.get_model("judging", "Job")
    rows = []
    for i, (kind, status) in enumerate(zip(KINDS, STATUSES, strict=True)):
        job = Job.objects.create(
            kind=kind,
            status=status,
            parameters={"items": list(range(i + 1)), "errors": [f"item {i}: boom"]},
            total=i + 1,
            done=i,
            failed=1,
            error="" if status != "failed" else "it broke",
            celery_task_id=f"task-{i}",
            created_by=user,
        )
        rows.append(
            {"pk": job.pk, "kind": kind, "status": status, "total": i + 1, "done": i, "created_by": user.pk}
        )
    mine = next(r for r in rows if r["kind"] == "mine")
    run = apps.get_model("mining", "MiningRun").objects.create(name="run", config={}, job_id=mine["pk"])
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    job_type, _ = ContentType.objects.get_or_create(app_label="judging", model="job")
    add_job, _ = Permission.objects.get_or_create(
        codename="add_job", content_type=job_type, defaults={"name": "Can add job"}
    )
    user.user_permissions.add(add_job)
    return rows, run.pk, user.pk


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_job_when_the_model_moves_to_the_core(migrator: Any) -> None:
    old = migrator.apply_initial_migration(BEFORE)
    rows, run_pk, user_pk = _old_jobs(old.apps)
    assert "judging_job" in _tables()

    new = migrator.apply_tested_migration(AFTER)

    Job = new.apps.get_model("jobs", "Job")
    moved = {job.pk: job for job in Job.objects.all()}
    assert sorted(moved) == sorted(row["pk"] for row in rows)
    for row in rows:
        job = moved[row["pk"]]
        assert (job.kind, job.status, job.total, job.done, job.created_by_id) == (
            row["kind"],
            row["status"],
            row["total"],
            row["done"],
            row["created_by"],
        )
        assert job.parameters["errors"] and len(job.parameters["items"]) == row["total"]
    tables = _tables()
    assert "jobs_job" in tables and "judging_job" not in tables
    run = new.apps.get_model("mining", "MiningRun").objects.get(pk=run_pk)
    assert moved[run.job_id].kind == "mine"
    # whoever could run jobs still can: the permission now belongs to jobs.job
    Permission = new.apps.get_model("auth", "Permission")
    held = Permission.objects.filter(user__pk=user_pk).values_list("content_type__app_label", "codename")
    assert list(held) == [("jobs", "add_job")]
    # new jobs continue the same id sequence
    assert Job.objects.create(kind="judge").pk > max(moved)


@pytest.mark.django_db(transaction=True)
def test_it_stores_the_prompt_text_of_rows_whose_file_still_matches(migrator: Any) -> None:
    old = migrator.apply_initial_migration([("judging", "0004_job_moves_to_core")])
    Judge = old.apps.get_model("judging", "Judge")
    path = "prompts/judge.txt"
    text = (Path(settings.BASE_DIR) / path).read_text(encoding="utf-8")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    config = {"model": "m", "backend": "local"}
    same = Judge.objects.create(
        judge_id="same", model="m", prompt_path=path, prompt_sha256=sha, config=config
    )
    edited = Judge.objects.create(
        judge_id="edited", model="m", prompt_path=path, prompt_sha256="0" * 64, config=config
    )
    imported = Judge.objects.create(judge_id="imported", model="m", prompt_sha256=sha)

    new = migrator.apply_tested_migration([("judging", "0005_prompt_text")])

    texts = dict(new.apps.get_model("judging", "Judge").objects.values_list("judge_id", "prompt_text"))
    assert texts == {same.judge_id: text, edited.judge_id: "", imported.judge_id: ""}
