"""The mining app's kind of job, as the core (h2e_site.jobs) runs and shows it: mine (a How2Mine run)."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import JobDescription, JobLink, JobSubject, JobType, TaskName, job_type_register

from .job_kinds import MINE
from .models import MiningRun


def describe_mine_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """MINE jobs: their mining run (one query), its page and its funnel by topic."""
    runs = MiningRun.objects.in_bulk([pk for job in jobs if (pk := job.parameters.get("run")) is not None])
    descriptions = {}
    for job in jobs:
        run = runs.get(job.parameters.get("run"))
        if run is None:
            continue
        page = reverse("mine:run", args=[run.pk])
        funnel = reverse("admin:mining_miningrun_funnel", args=[run.pk])
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("mining run", run.name, page, f"#{run.pk}"),),
            links=(JobLink("The run's funnel", page, "Funnel"), JobLink("By topic, tokens and cost", funnel)),
        )
    return descriptions


def register_job_types() -> None:
    job_type_register(
        JobType(
            MINE,
            TaskName("mining.run_mine_job"),
            label="Mine procedures",
            describe=describe_mine_jobs,
            start_hint="Mine: the Mining page, the admin's mining runs, POST /api/mining/runs/<id>/start/, "
            "or manage.py mine.",
            start_link=("Mine procedures", "mine:runs"),
        )
    )
