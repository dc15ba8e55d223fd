"""The kind's job, as the core (h2e_site.jobs) runs and shows it: calibration_round, a calibration study's
next round over a large frame (calibration/jobs.py). annotation/mounting/ready.py registers it through the
registry."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from annotation.base.job_kinds import CALIBRATION_ROUND
from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import JobDescription, JobLink, JobSubject, JobType, TaskName, job_type_register


def describe_round_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The study of each calibration_round job (its page's calibration section) and the round's design."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        slug = str(parameters.get("study_slug", ""))
        url = reverse("annotation:study_detail", args=[slug]) + "#calibration" if slug else ""
        facts = [("size (n)", str(parameters.get("size", ""))), ("design", str(parameters.get("design", ""))),
                 ("seed", str(parameters.get("seed", "")))]  # fmt: skip
        if parameters.get("round"):
            facts.append(("round", f"{parameters['round']}: {parameters.get('new_items', 0)} new items"))
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("study", slug, url, slug),) if slug else (),
            links=(JobLink("The study's calibration sample", url, "Study"),) if url else (),
            facts=tuple(facts),
        )
    return descriptions


def _round_note(job: Job) -> str:
    parameters = job.parameters
    return f"{parameters.get('study_slug', '')}: n={parameters.get('size')}, {parameters.get('design')}"


def register_job_types() -> None:
    job_type_register(
        JobType(
            CALIBRATION_ROUND,
            TaskName("annotation.run_calibration_round_job"),
            label="Calibration round",
            note=_round_note,
            describe=describe_round_jobs,
            start_hint="Draw a calibration study's next round over a large frame: the study page's "
            "“Draw the next round”, or POST /api/studies/<slug>/calibration-rounds/.",
        )
    )
