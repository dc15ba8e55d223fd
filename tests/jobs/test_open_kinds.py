"""The core lists no kind of job: a kind registered by any app (here, by this test) is created, started from
the API, run, listed, filtered and labelled without a migration of the core, and the core's code speaks no
app's words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import shared_task
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework import serializers

from h2e_site.jobs import registry
from h2e_site.jobs.loop import JobWork, job_run
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.registry import JobType, job_type_register
from h2e_site.jobs.services import job_create

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
KIND = "count_words_of_a_text_for_this_test"  # longer than the 16 characters the column used to allow
# Words of the apps' fields (judging, mining, annotation) that the core's jobs code and pages must not use.
APP_WORDS = re.compile(
    r"judg|generat|\bL[12]\b|mining|\bmine\b|how2|step.type|task.set|classif|procedure|\bgoal|study|critical",
    re.IGNORECASE,
)


class CountWork(JobWork):
    """Counts the words of parameters["text"]: one done item per word, a failed one per word "fail"."""

    def run(self) -> None:
        for word in self.job.parameters["text"].split():
            if word == "fail":
                self.progress.failed += 1
                self.keep_error("the word fail")
            else:
                self.progress.done += 1


@shared_task(name="tests.run_count_words_job")
def run_count_words_job(job_id: int) -> None:
    job_run(job_id, KIND, CountWork)


class CountWordsSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[(KIND, "count words")])
    text = serializers.CharField(max_length=200)


def _api_create(data: dict[str, Any], created_by: Any) -> Job:
    text = data["text"]
    return job_create(kind=KIND, parameters={"text": text}, total=len(text.split()), created_by=created_by)


@pytest.fixture
def count_words_kind() -> Iterator[JobType]:
    """The kind registered as an app's ready() would, and forgotten after the test."""
    job_type = JobType(
        KIND,
        run_count_words_job,
        label="Count words",
        note=lambda job: f"{len(job.parameters['text'])} characters",
        create_serializer=f"{__name__}.CountWordsSerializer",
        api_create=_api_create,
        api_parameters=(("text", "the text counted"),),
    )
    job_type_register(job_type)
    yield job_type
    del registry._JOB_TYPES[KIND]


def test_its_kind_column_has_no_choices_to_migrate() -> None:
    field = Job._meta.get_field("kind")
    assert not field.choices and field.max_length == registry.KIND_MAX_LENGTH


def test_a_new_kind_runs_end_to_end_without_a_migration(
    count_words_kind: JobType, admin_client: Client
) -> None:
    response = admin_client.post(
        "/api/jobs/", {"kind": KIND, "text": "one two fail three"}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["text"], body["total"]) == (KIND, "one two fail three", 4)
    run_count_words_job(body["id"])
    job = Job.objects.get(pk=body["id"])
    assert (job.status, job.done, job.failed, job.kind_label) == (JobStatus.SUCCEEDED, 3, 1, "Count words")
    assert str(job) == f"Count words job #{job.pk} (succeeded)"
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # SystemExit(1) if one were needed


def test_a_new_kind_is_listed_labelled_and_filtered(count_words_kind: JobType, admin_client: Client) -> None:
    job = job_create(kind=KIND, parameters={"text": "a b"}, total=2, enqueue=False)
    other = job_create(kind="import", parameters={}, enqueue=False)
    page = admin_client.get(reverse("jobs:job_list")).content.decode()
    assert 'Count words <span class="muted small">(3 characters)</span>' in page
    api = admin_client.get("/api/jobs/", {"kind": KIND}).json()
    assert [row["id"] for row in api["results"]] == [job.pk]
    admin_page = admin_client.get(reverse("admin:jobs_job_changelist"), {"kind": KIND}).content.decode()
    assert f"?kind={KIND}" in admin_page and "Count words" in admin_page
    assert f'value="{job.pk}"' in admin_page and f'value="{other.pk}"' not in admin_page


def test_it_refuses_to_create_a_job_of_a_kind_no_app_registered() -> None:
    with pytest.raises(LookupError, match="'count_words_of_a_text_for_this_test'"):
        job_create(kind=KIND, parameters={}, enqueue=False)
    assert not Job.objects.exists()


def test_it_refuses_to_register_a_kind_longer_than_its_column() -> None:
    with pytest.raises(ValueError, match="1 to 64 characters"):
        job_type_register(JobType("x" * 65, run_count_words_job))


def test_the_api_schema_lists_the_registered_kinds(admin_client: Client) -> None:
    schema = admin_client.get("/api/schema/", {"format": "json"}).json()
    parameters = schema["paths"]["/api/jobs/"]["get"]["parameters"]
    (kind,) = [p for p in parameters if p["name"] == "kind"]
    assert {"generate", "judge", "mine", "classify_steps"} <= set(kind["schema"]["enum"])


def test_the_core_jobs_code_speaks_no_apps_words() -> None:
    files = [*(ROOT / "h2e_site" / "jobs").glob("*.py"), *(ROOT / "templates" / "jobs").glob("*.html")]
    assert len(files) > 10
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if APP_WORDS.search(line)
    ]
    assert found == []
