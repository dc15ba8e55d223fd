"""Following a job from a management command (--wait): a progress bar on stderr that polls the Job row until
it finishes, and the summary line every command prints. One place for the job-starting commands of every
app."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from .models import Job, JobStatus

POLL_SECONDS = 0.5


def show_progress(bar: tqdm, job: Job) -> None:
    """The bar brought to the job's counts (items done or failed, of its total) and status."""
    bar.total = job.total
    bar.n = job.done + job.failed
    bar.set_postfix(failed=job.failed, status=job.status, refresh=False)
    bar.refresh()


def wait_for_job(job: Job, *, disable: bool = False) -> Job:
    """Poll the Job row with a progress bar (stderr) until it finishes; the finished row."""
    with tqdm(total=job.total, desc=f"job {job.pk} {job.kind}", file=sys.stderr, disable=disable) as bar:
        while True:
            job.refresh_from_db()
            show_progress(bar, job)
            if job.is_finished:
                return job
            time.sleep(POLL_SECONDS)


def follow_job(command: BaseCommand, job: Job, *, disable: bool = False) -> Job:
    """wait_for_job, then the summary on the command's stdout (its error on stderr); CommandError unless
    the job succeeded."""
    wait_for_job(job, disable=disable)
    command.stdout.write(f"job {job.pk} {job.status}: {job.done} done, {job.failed} failed of {job.total}")
    if job.error:
        command.stderr.write(job.error)
    if job.status != JobStatus.SUCCEEDED:
        raise CommandError(f"job {job.pk} {job.status}")
    return job


def warn_not_queued(command: BaseCommand, jobs: Sequence[Job], *, done: str) -> None:
    """After a command stored what it was asked to (`done` says what), a warning on stderr for each job it
    queued that could not be queued (services.jobs_not_queued: the broker unreachable), saying how to run
    it. The exit status stays 0: what was stored is stored, and the job can be run later."""
    for job in jobs:
        command.stderr.write(command.style.WARNING(f"Warning: {done}, but {job.error}"))


def run_or_follow(
    command: BaseCommand,
    job: Job,
    run: Callable[..., object],
    *,
    inline: bool,
    wait: bool,
    disable: bool = False,
    label: str = "",
) -> None:
    """What a job-starting command does after creating its job: with `inline`, `run(job_id=...,
    on_progress=...)` here with a progress bar, then the summary (follow_job); with `wait`, follow_job;
    else nothing (the job id was printed)."""
    if inline:
        desc = f"job {job.pk} {label or job.kind}"
        with tqdm(total=0, desc=desc, file=sys.stderr, disable=disable) as bar:
            run(job_id=job.pk, on_progress=lambda row: show_progress(bar, row))
        follow_job(command, Job.objects.get(pk=job.pk), disable=True)
    elif wait:
        follow_job(command, job, disable=disable)
    else:
        refuse_not_queued(job)


def refuse_not_queued(job: Job) -> None:
    """CommandError when the job a command just created could not be queued (services.job_enqueue marked it
    failed: the broker unreachable): the command's one task failed, and its message says how to run it."""
    job.refresh_from_db()
    if job.status == JobStatus.FAILED:
        raise CommandError(job.error)


__all__ = [
    "POLL_SECONDS",
    "follow_job",
    "refuse_not_queued",
    "run_or_follow",
    "show_progress",
    "wait_for_job",
    "warn_not_queued",
]
