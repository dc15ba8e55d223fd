"""The `calibration_round` job: a calibration study's next round over a large frame (more than
calibration_sample.ROUND_JOB_FRAME examples), drawn by a worker instead of inside the request (issue #31
item 22: at 140,000 frame examples a round takes seconds).

calibration_round_job_create() checks the round as the request path does (resolve_round: the study's
defaults filled in, a random seed chosen now and stored, so a retried job draws the same round) and queues
the job; the Celery task (the kind's job_types.py) calls calibration_round_job_run(), which draws it with
ROUND_STEPS steps of progress. The round is stored in one transaction that also records its number on the
job, so a job redelivered after its worker died either finds its round stored or draws it whole.

Started from the study page ("Draw the next round"), POST /api/studies/<slug>/calibration-rounds/ (202 and
the job) or `manage.py calibration_round` (in-process, with a progress bar).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError

from annotation.base.job_kinds import CALIBRATION_ROUND
from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration.sample import (
    ROUND_STEPS,
    ResolvedRound,
    RoundRequest,
    next_round,
    resolve_round,
)
from annotation.kinds.critical_failures.models import CalibrationRound
from h2e_site.jobs.loop import JobWork, Progress, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def calibration_round_job_create(
    *, study: Study, request: RoundRequest, created_by: User | None = None, enqueue: bool = True
) -> Job:
    """A queued job drawing the study's next round; ValidationError naming the field the round refuses
    (resolve_round), PermissionDenied without the 'add job' permission (job_create)."""
    resolved = resolve_round(study=study, request=request)
    parameters = {
        "study": study.pk,
        "study_slug": study.slug,
        "size": resolved.size,
        "design": resolved.design,
        "judge_ids": resolved.judge_ids,
        "seed": resolved.seed,
    }
    return job_create(
        kind=CALIBRATION_ROUND, parameters=parameters, total=ROUND_STEPS, created_by=created_by,
        enqueue=enqueue,
    )  # fmt: skip


def calibration_round_job_run(*, job_id: int, on_progress: Callable[[Job], None] | None = None) -> Job | None:
    """Run (or run again) the calibration_round job `job_id`."""
    return job_run(job_id, CALIBRATION_ROUND, lambda job: RoundWork(job, on_progress))


class RoundWork(JobWork):
    def run(self) -> None:
        parameters = self.job.parameters
        if parameters.get("round"):
            self.progress = Progress(done=ROUND_STEPS)
            return  # stored before its worker died
        study = Study.objects.filter(pk=parameters.get("study")).first()
        if study is None:
            self.failure = "study: deleted before the job ran"
            return
        self.progress = Progress()
        self.write_progress(force=True)
        resolved = ResolvedRound(
            int(parameters["size"]), str(parameters["design"]), [int(j) for j in parameters["judge_ids"]],
            int(parameters["seed"]),
        )  # fmt: skip
        try:
            next_round(study=study, request=resolved, on_progress=self._step, on_stored=self._stored)
        except ValidationError as refused:
            self.failure = "; ".join(
                f"{name}: {' '.join(errors)}" for name, errors in refused.message_dict.items()
            )

    def _step(self, n: int) -> None:
        self.progress.done += n
        self.write_progress(force=True)

    def _stored(self, calibration_round: CalibrationRound) -> None:
        """In the round's transaction: the job records it (a redelivered job finds it)."""
        self.job.parameters = {
            **self.job.parameters,
            "round": calibration_round.number,
            "new_items": calibration_round.new_items,
            "drawn": calibration_round.size,
        }
        Job.objects.filter(pk=self.job.pk).update(parameters=self.job.parameters)


__all__ = ["RoundWork", "calibration_round_job_create", "calibration_round_job_run"]
