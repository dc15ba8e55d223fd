"""The checkpoints page's buttons: the existing generate job (judging/generate_jobs.py, the bench split) and
judge job (judging/judge_jobs.py, the L2 the judge has not judged yet) for one checkpoint or all of them.

A checkpoint with nothing left to do starts no job (an empty job would only say "done"), and one that
cannot run (an imported generator or judge, a prompt file changed since) is named with the reason; the
others still start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from django.db import transaction

from h2e_site.jobs.models import Job

from ..generate_jobs import generate_job_create
from ..judge_jobs import judge_job_create
from ..models import Generator, Judge
from .checkpoint_models import Checkpoint

if TYPE_CHECKING:
    from django.contrib.auth.models import User

JobAction = Literal["generate", "judge"]


@dataclass
class StartedJobs:
    jobs: list[Job] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # one line per checkpoint that started no job


class _NothingToDo(Exception):
    pass


def _start(create: Callable[[], Job]) -> Job | None:
    """The job `create` makes, or None (and no job row, nothing enqueued) when it has no item."""
    try:
        with transaction.atomic():
            job = create()
            if job.total == 0:
                raise _NothingToDo
    except _NothingToDo:
        return None
    return job


def _create(action: JobAction, generator: Generator, judge: Judge | None, created_by: User | None) -> Job:
    if action == "generate":
        return generate_job_create(generator=generator, split="bench", created_by=created_by)
    if judge is None:
        raise ValueError("a judge job needs a judge")
    return judge_job_create(judge=judge, generator=generator, created_by=created_by)


def checkpoint_jobs_start(
    *,
    checkpoints: Sequence[Checkpoint],
    action: JobAction,
    judge: Judge | None = None,
    created_by: User | None = None,
) -> StartedJobs:
    """One generate job (bench split) or judge job (with `judge`) per checkpoint that has something to do."""
    started = StartedJobs()
    for checkpoint in checkpoints:
        try:
            job = _start(lambda: _create(action, checkpoint.generator, judge, created_by))  # noqa: B023
        except ValueError as refused:  # an imported generator or judge, a changed prompt file
            started.refusals.append(f"{checkpoint.name}: {refused}")
            continue
        if job is None:
            what = "every bench procedure has its L2" if action == "generate" else "no L2 left to judge"
            started.refusals.append(f"{checkpoint.name}: nothing to {action} ({what}).")
        else:
            started.jobs.append(job)
    return started
