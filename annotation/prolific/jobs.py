"""The Prolific actions that can take long run as jobs (h2e_site.jobs), each with a live row on the study
page: syncing a study's submissions, sending a bulk review, paying bonuses. The page checks the permissions
and the form and queues the job (prolific_job_create); the worker's client has no page budget (each request
still times out after TIMEOUT_SECONDS and is retried), and the job's row and page say what came of it.

- prolific_sync {study}: every submission read, then recorded at once (prolific_studies.submissions_sync).
- prolific_review {study, action, submissions, rejection_category, message, approve_screened}: the
  submissions are read and planned again when the job runs (prolific_studies.review_plan), so what was
  reviewed since the preview is not sent again; progress: one per submission sent or refused by Prolific.
- prolific_bonuses {study, reason}: the NEW bonus rows of that reason paid with the job's own claim key (a
  job run again after its worker died takes back the rows it claimed and never sent to pay).

A job run again does its action again: sync and review are safe to repeat (Prolific's review transitions
are idempotent and only submissions awaiting review are sent), and a bonus row is paid at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from annotation.base.job_kinds import PROLIFIC_BONUSES, PROLIFIC_KINDS, PROLIFIC_REVIEW, PROLIFIC_SYNC
from annotation.base.models import Study
from annotation.prolific.bonuses import bonuses_pay
from annotation.prolific.client import ProlificClient, ProlificError, retries_note
from annotation.prolific.studies import ReviewSent, review_plan, review_rows, review_send, submissions_sync
from h2e_site.jobs.loop import JobWork, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def prolific_job_create(*, kind: str, study: Study, created_by: User | None, **parameters: Any) -> Job:
    """A queued job of one of PROLIFIC_KINDS on `study` (job_create checks the user may start jobs)."""
    if kind not in PROLIFIC_KINDS:
        raise ValueError(f"kind: expected one of {', '.join(PROLIFIC_KINDS)}, got {kind!r}")
    parameters = {"study": study.pk, "study_slug": study.slug, **parameters}
    return job_create(kind=kind, parameters=parameters, created_by=created_by)


def prolific_job_active(*, kind: str, study: Study, **parameters: Any) -> Job | None:
    """A queued or running job of `kind` on `study` with these parameters (a double click finds it)."""
    lookups = {f"parameters__{name}": value for name, value in parameters.items()}
    return Job.objects.active().filter(kind=kind, parameters__study=study.pk, **lookups).first()


def prolific_job_run(*, job_id: int, kind: str) -> Job | None:
    """Run (or run again) the Prolific job `job_id` of `kind`."""
    return job_run(job_id, kind, ProlificWork)


class ProlificWork(JobWork):
    def run(self) -> None:
        study = Study.objects.filter(pk=self.job.parameters.get("study")).first()
        if study is None or not study.prolific_study_id:
            self.failure = "the study is gone, or has no Prolific study id"
            return
        try:
            client = ProlificClient()
        except ImproperlyConfigured as missing:
            self.failure = str(missing)
            return
        try:
            result = RUNS[self.job.kind](self, study, client)
        except ProlificError as failed:
            self.failure = f"{failed} {retries_note(client.retries)}".strip()
            return
        self.job.parameters = {**self.job.parameters, "result": f"{result} {retries_note(client.retries)}"}

    def total(self, total: int) -> None:
        self.job.total = total
        Job.objects.filter(pk=self.job.pk).update(total=total)


def _sync(work: ProlificWork, study: Study, client: ProlificClient) -> str:
    counts = submissions_sync(study, client)
    work.total(counts["submissions"])
    work.progress.done = counts["submissions"]
    return (
        f"Synced {counts['submissions']} submissions: {counts['recorded']} statuses recorded, "
        f"{counts['released']} items freed."
    )


def _review(work: ProlificWork, study: Study, client: ProlificClient) -> str:
    data = {key: work.job.parameters.get(key) or default for key, default in REVIEW_FIELDS.items()}
    plan = review_plan(review_rows(study, client), data)
    work.total(sum(1 for row in plan if not row["refusal"]))

    def sent(outcome: ReviewSent) -> None:
        work.progress.done, work.progress.failed = outcome.sent, len(outcome.refused)
        work.write_progress()

    outcome = review_send(client, plan, data, on_sent=sent)
    sent(outcome)
    for refused in outcome.refused:
        work.keep_error(refused)
    not_sent = sum(1 for row in plan if row["refusal"])
    action = data["action"].lower()
    summary = f"{outcome.sent} submissions sent to Prolific ({action}); {not_sent} refused by the studio."
    if outcome.stopped:
        work.failure = (
            f"{summary} Then Prolific failed, the rest was not sent (review again): {outcome.stopped}"
        )
    return summary


REVIEW_FIELDS: dict[str, Any] = {
    "action": "", "submissions": [], "rejection_category": "", "message": "", "approve_screened": [],
}  # fmt: skip


def _bonuses(work: ProlificWork, study: Study, client: ProlificClient) -> str:
    run = bonuses_pay(
        study=study, reason=work.job.parameters["reason"], client=client, claim=f"job-{work.job.pk}"
    )
    work.total(run.claimed)
    work.progress.done, work.progress.failed = run.paid, run.unknown + run.refused
    if run.error:
        work.keep_error(run.error)
    return f"Bonuses: {run.paid} paid, {run.unknown} unknown (check on Prolific), {run.refused} refused."


RUNS: dict[str, Callable[[ProlificWork, Study, ProlificClient], str]] = {
    PROLIFIC_SYNC: _sync,
    PROLIFIC_REVIEW: _review,
    PROLIFIC_BONUSES: _bonuses,
}
