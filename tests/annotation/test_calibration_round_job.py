"""A calibration round over a large frame is a job (issue #31 item 22): above ROUND_JOB_FRAME frame examples
the study page and the API start a calibration_round job (its live row on the study page; the 'add job'
permission), the job draws the round with its steps of progress, and a job run again after its round was
stored draws nothing more. At or below the threshold the round is drawn in the request, as before."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.job_kinds import CALIBRATION_ROUND
from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_run
from annotation.kinds.critical_failures.models import CalibrationDraw, CalibrationRound
from h2e_site.jobs.models import Job, JobStatus
from tests.annotation.test_calibration_sample import _frame, _study

pytestmark = pytest.mark.django_db


@pytest.fixture
def large_frame(monkeypatch: pytest.MonkeyPatch) -> Study:
    """A calibration study of 8 frame examples, 4 drawn, with the threshold at 5: its frame is "large"."""
    generations = _frame({"Health": 5, "Travel": 3})
    study = _study(generations[0].generator, "uniform", 4)
    monkeypatch.setattr(calibration_sample, "ROUND_JOB_FRAME", 5)
    return study


def _round_url(study: Study) -> str:
    return reverse("annotation:study_calibration_round", args=[study.slug])


def test_a_round_over_a_large_frame_starts_a_job_with_a_live_row(runner: Client, large_frame: Study) -> None:
    study = large_frame
    page = runner.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "the round is drawn by a job" in page
    response = runner.post(_round_url(study), {"size": "2", "design": "uniform", "seed": "3"})
    assert response.status_code == 302
    assert study.calibration_rounds.count() == 1  # not drawn in the request
    job = Job.objects.get(kind=CALIBRATION_ROUND)
    assert job.status == JobStatus.QUEUED and job.total == calibration_sample.ROUND_STEPS
    assert job.parameters["study"] == study.pk and job.parameters["seed"] == 3
    page = runner.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert f'id="job-{job.pk}"' in page and 'hx-trigger="every 2s"' in page  # the live row
    assert "Round jobs" in page

    seen: list[tuple[int, int]] = []
    done = calibration_round_job_run(job_id=job.pk, on_progress=lambda j: seen.append((j.done, j.total)))
    assert done is not None and done.status == JobStatus.SUCCEEDED, done and done.error
    assert [d for d, _ in seen][-1] == calibration_sample.ROUND_STEPS
    assert done.done == done.total == calibration_sample.ROUND_STEPS
    assert done.parameters["round"] == 2
    second = study.calibration_rounds.get(number=2)
    assert (second.design, second.seed, second.size) == ("uniform", 3, 2)
    assert CalibrationDraw.objects.filter(round=second).count() == 8
    # after n = 4 then n = 2 of 8: 1 - (1 - 0.5)(1 - 0.25) = 0.625 for every example
    page = runner.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "from <strong>0.6250</strong> to <strong>0.6250</strong>" in page


def test_a_job_run_again_after_its_round_was_stored_draws_nothing_more(
    runner: Client, large_frame: Study
) -> None:
    runner.post(_round_url(large_frame), {"size": "2", "design": "uniform", "seed": "3"})
    job = Job.objects.get(kind=CALIBRATION_ROUND)
    calibration_round_job_run(job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, finished_at=None)  # a redelivery
    again = calibration_round_job_run(job_id=job.pk)
    assert again is not None and again.status == JobStatus.SUCCEEDED
    assert large_frame.calibration_rounds.count() == 2


def test_a_round_job_needs_the_run_permission_and_a_valid_round(
    staff: Client, runner: Client, large_frame: Study
) -> None:
    assert staff.post(_round_url(large_frame), {"size": "2"}).status_code == 403
    response = runner.post(_round_url(large_frame), {"size": "2", "design": "disagreement"})
    assert response.status_code == 400 and "judges" in response.context["round_form"].errors
    assert not Job.objects.exists() and large_frame.calibration_rounds.count() == 1


def test_the_api_answers_202_with_the_job_over_a_large_frame(
    staff: Client, runner: Client, large_frame: Study
) -> None:
    api = reverse("api:study-calibration-rounds", args=[large_frame.slug])
    refused = staff.post(api, {"size": 2, "seed": 5}, content_type="application/json")
    assert refused.status_code == 403 and "add job" in refused.json()["detail"]
    assert not Job.objects.exists()
    response = runner.post(api, {"size": 2, "seed": 5}, content_type="application/json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job"])
    assert job.kind == CALIBRATION_ROUND and job.parameters["size"] == 2
    assert CalibrationRound.objects.filter(study=large_frame).count() == 1


def test_a_round_at_the_threshold_is_drawn_in_the_request(
    staff: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    generations = _frame({"Health": 8})
    study = _study(generations[0].generator, "uniform", 4)
    monkeypatch.setattr(calibration_sample, "ROUND_JOB_FRAME", 8)
    response = staff.post(_round_url(study), {"size": "2", "design": "uniform", "seed": "3"})
    assert response.status_code == 302
    assert study.calibration_rounds.count() == 2 and not Job.objects.exists()
