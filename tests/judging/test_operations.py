"""An admin's judging operations (issue #11, 11-14): an imported judge made runnable by attaching a config
that describes it, job states that say what happened, confirmations before actions run, judge choices
without twins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.test import Client
from django.urls import reverse

from h2e_site.jobs.loop import JobWork, job_run
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.llm.prompts import prompt_sha256
from judging import judge_files
from judging.configs import config_for_judge
from judging.job_kinds import JUDGE
from judging.judge_jobs import judge_job_create
from judging.models import Judge, JudgeError
from tests.factories import make_generation, make_job, make_judgment

from .runnable import make_runnable_generator, make_runnable_judge
from .test_run_admin import act, messages_of

pytestmark = pytest.mark.django_db
JUDGE_PROMPT = (Path(settings.BASE_DIR) / "prompts" / "judge.txt").read_text(encoding="utf-8")


def imported_judge(**fields: Any) -> Judge:
    """A judge as import_h2e leaves it: the reference's id and manifest, no config."""
    values = {"judge_id": "0a1b2c3d4e5f", "model": "org/judge-x", "temperature": 0.0, "max_new_tokens": 4096,
              "prompt_sha256": prompt_sha256(JUDGE_PROMPT), **fields}  # fmt: skip
    return Judge.objects.create(**values)


def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fields: Any) -> Path:
    config = {"model": "org/judge-x", "backend": "openai", "provider": "openai", "base_url": "http://127.0.0.1:9/v1",
              **fields}  # fmt: skip
    (tmp_path / "judge-x.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)
    return tmp_path


# --- 11. imported judges ----------------------------------------------------------------------------------


def test_it_says_what_to_do_with_an_imported_judge() -> None:
    with pytest.raises(ValueError, match="Attach a config…") as refused:
        config_for_judge(imported_judge())
    assert "prompt_sha256" in str(refused.value) and "--judge-config" in str(refused.value)


def test_it_attaches_a_config_that_describes_the_judge_and_then_rejudges(
    admin_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = imported_judge()
    config_dir(tmp_path, monkeypatch)
    page = act(admin_client, "judge", "attach_config", [judge])
    assert page.status_code == 200 and "configs/judges/judge-x.yaml" in page.content.decode()
    act(admin_client, "judge", "attach_config", [judge], apply="yes", config_file="judge-x.yaml")
    judge.refresh_from_db()
    assert judge.judge_id == "0a1b2c3d4e5f" and judge.prompt_text == JUDGE_PROMPT
    assert config_for_judge(judge).model == "org/judge-x"
    failed = make_judgment(generation=make_generation(), judge=judge, parse_failed=True)
    job = judge_job_create(
        judge=judge, generation_ids=[failed.generation_id], mode="parse_failed", enqueue=False
    )
    assert job.total == 1


@pytest.mark.parametrize(
    ("judge_fields", "config_fields", "says"),
    [
        ({"prompt_sha256": "f" * 64}, {}, "hashes to"),
        ({}, {"temperature": 0.7}, "temperature: the config says 0.7, the judge was run with 0.0"),
        ({}, {"model": "org/other"}, "model: the config says &#x27;org/other&#x27;"),
    ],
)
def test_it_refuses_a_config_that_does_not_describe_the_judge(
    admin_client: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    judge_fields: dict[str, Any],
    config_fields: dict[str, Any],
    says: str,
) -> None:
    judge = imported_judge(**judge_fields)
    config_dir(tmp_path, monkeypatch, **config_fields)
    page = act(admin_client, "judge", "attach_config", [judge], apply="yes", config_file="judge-x.yaml")
    assert page.status_code == 200 and says in page.content.decode()
    judge.refresh_from_db()
    assert judge.config == {} and judge.prompt_text == ""


# --- 12. job states ---------------------------------------------------------------------------------------


class _EveryItemFails(JobWork):
    def run(self) -> None:
        self.progress.failed = 22
        self.keep_error("item 1: HTTP 500 after 6 attempts")


def test_it_calls_a_job_whose_every_item_failed_failed() -> None:
    job = make_job(kind=JUDGE, status=JobStatus.QUEUED, total=22, done=0)
    finished = job_run(job.pk, JUDGE, _EveryItemFails)
    assert (
        finished is not None and finished.status == JobStatus.FAILED and "22 item(s) failed" in finished.error
    )


def test_it_says_a_success_had_failures(admin_client: Client) -> None:
    job = make_job(kind=JUDGE, status=JobStatus.SUCCEEDED, total=10, done=8, failed=2)
    html = admin_client.get(reverse("jobs:job_list")).content.decode()
    assert f'id="job-{job.pk}"' in html and "Succeeded, 2 failed" in html and "status-partial" in html


def test_it_refuses_a_retry_with_nothing_left_and_links_a_retry_to_its_job(admin_client: Client) -> None:
    judge, generator = make_runnable_judge(), make_runnable_generator()
    generation = make_generation(generator=generator)
    job = judge_job_create(judge=judge, generator=generator, enqueue=False)
    JudgeError.objects.create(judge=judge, generation=generation, job=job, error="HTTP 500", attempts=6)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, done=0, failed=1)
    retried = admin_client.post(reverse("jobs:job_retry", args=[job.pk]))
    retry = Job.objects.exclude(pk=job.pk).get()
    assert retried["Location"] == reverse("jobs:job_detail", args=[retry.pk])
    assert retry.parameters["retry_of"] == job.pk
    page = admin_client.get(reverse("jobs:job_detail", args=[retry.pk])).content.decode()
    assert f"The job it retries (#{job.pk})" in page and "re-judge parse failures" in page
    assert "parsefailed" not in page
    make_judgment(generation=generation, judge=judge)  # judged again since: the error is gone
    JudgeError.objects.all().delete()
    again = admin_client.post(reverse("jobs:job_retry", args=[job.pk]), follow=True)
    assert Job.objects.count() == 2  # no empty job
    assert any("no failed items left to retry" in m for m in messages_of(again, admin_client))


def test_it_tells_the_jobs_list_when_a_polled_job_has_finished(admin_client: Client) -> None:
    job = make_job(status=JobStatus.CANCELLED)  # cancelled in another tab
    row = admin_client.get(reverse("jobs:job_detail", args=[job.pk]), headers={"HX-Request": "true"})
    assert row.status_code == 200 and "jobs-changed" in row["HX-Trigger"]
    page = admin_client.get(reverse("jobs:job_list")).content.decode()
    assert 'hx-trigger="jobs-changed from:body"' in page


# --- 13 and 14. confirmations, choices --------------------------------------------------------------------


def test_it_lists_a_judge_made_from_a_config_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir(tmp_path, monkeypatch)
    (tmp_path / "other.yaml").write_text(yaml.safe_dump({"model": "org/other", "backend": "local"}), "utf-8")
    from h2e_site.llm.config import load_config
    from judging.configs import judge_for_config

    made = judge_for_config(load_config(tmp_path / "judge-x.yaml", role="judge"))
    choices = dict(judge_files.judge_choices())
    rows, files = choices["Judges"], choices.get("Config files", [])
    assert [label for _, label in rows] == [f"org/judge-x ({made.judge_id}) · configs/judges/judge-x.yaml"]
    assert [value for value, _ in files] == ["file:other.yaml"]


def test_it_shows_the_judgments_verdict_columns_first() -> None:
    from judging.admin.judgments import JudgmentAdmin

    assert JudgmentAdmin.list_display[1:4] == ["parse_failed", "has_failure", "n_failures"]
