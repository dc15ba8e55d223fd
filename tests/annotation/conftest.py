"""Helpers for the annotation tests: a small study over fresh generations, participants walked to items."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from annotation.base.models import Assignment, Participant, Stage, Study
from annotation.flow import services
from annotation.kinds.critical_failures.posted import Submission
from tests.annotation.gunicorn_server import Gunicorn
from tests.factories import make_generation, make_generator, make_procedure
from tests.worker_process import process_env

L1 = [
    "Place a spoonful of coconut oil in your mouth.",
    "Swish it for 10-20 minutes.",
    "Spit it into the trash.",
]
L2 = [
    "Measure 1 tablespoon of coconut oil.",
    "Swish it for 10-20 minutes.",
    "Spit it out.",
    "Rinse with water.",
]


def make_study(
    *,
    n_items: int = 3,
    k: int = 3,
    dwell: int = 0,
    attention_checks: int = 0,
    l1: Sequence[str] = L1,
    l2: Sequence[str] = L2,
    **settings: Any,
) -> Study:
    generator = make_generator(model="model-under-test")
    for i in range(n_items):
        procedure = make_procedure(goal=f"Do oil pulling, variant {i}", steps=l1, topic="Health")
        make_generation(generator=generator, procedure=procedure, predicted_steps=l2)
    settings.setdefault("attention_check_every", 0)
    return services.study_create(
        title="Coconut study",
        slug=settings.pop("slug", f"coconut-{generator.pk}"),
        selection=services.Selection(generator_ids=[generator.pk]),
        attention_checks=attention_checks,
        annotators_per_item=k,
        min_dwell_seconds=dwell,
        completion_code="C0MPLETE",
        screenout_code="SCREEN0UT",
        attention_failed_code="ATTENT10N",
        **settings,
    )


def pid(n: int) -> str:
    return f"{n:024x}"


def qualified(study: Study, n: int) -> Participant:
    """A participant who has consented, trained and passed the comprehension check."""
    participant = services.participant_enter(
        study=study, prolific_pid=pid(n), prolific_study_id="S", prolific_session_id="X", user_agent="test"
    )
    services.participant_consent(participant=participant)
    services.participant_finish_training(participant=participant)
    answers = {i: q["answer"] for i, q in enumerate(study.comprehension_questions)}
    services.comprehension_grade(participant=participant, answers=answers)
    participant.refresh_from_db()
    assert participant.stage == Stage.ITEMS
    return participant


def read_everything(assignment: Any, *, seconds: float = 120.0) -> Any:
    """Acknowledge the goal and read every L2 step, as a participant who took `seconds` over it (the item
    is shown that long ago: the server bounds the browser's active time by its own clock)."""
    services.assignment_acknowledge_goal(assignment=assignment)
    for n in range(1, assignment.n_reading_steps + 1):
        assignment = services.assignment_reveal_step(assignment=assignment, number=n)
    issued_at = assignment.issued_at - timedelta(seconds=seconds)
    Assignment.objects.filter(pk=assignment.pk).update(issued_at=issued_at)
    assignment.issued_at = issued_at
    return assignment


def annotate_all(participant: Participant, answer: Callable[[Any], Any]) -> list[Any]:
    """Through the services, as the pages do: the participant takes items until none is left, reads each in
    full (read_everything), submits answer(assignment) (a Submission of the study's kind); the assignments in
    the order taken."""
    taken = []
    while (assignment := services.assignment_next(participant=participant)) is not None:
        assignment = read_everything(assignment)
        services.annotation_submit(assignment=assignment, submission=answer(assignment))
        participant.refresh_from_db()
        taken.append(assignment)
    return taken


def no_failure() -> Submission:
    return Submission(has_failure=False, failures=[], comments="", user_agent="test")


@pytest.fixture(scope="session")
def gunicorn_server(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    """The app under gunicorn with 4 workers on the test database, once per session (the concurrency tests
    race real HTTP clients against it; each empties the database after itself)."""
    env = process_env(redis_url=os.environ.get("REDIS_URL"), var_dir=tmp_path_factory.mktemp("gunicorn"))
    gunicorn = Gunicorn(env, workers=4)
    try:
        gunicorn.wait_until_ready()
        yield gunicorn
    finally:
        gunicorn.stop()


def run_prolific_jobs() -> list[Any]:
    """Run the queued Prolific jobs (sync, review, bonuses) the pages queued, oldest first, as a worker would;
    the finished jobs."""
    from annotation.base.job_kinds import PROLIFIC_KINDS
    from annotation.prolific.jobs import prolific_job_run
    from h2e_site.jobs.models import Job, JobStatus

    queued = Job.objects.filter(kind__in=PROLIFIC_KINDS, status=JobStatus.QUEUED).order_by("pk")
    return [prolific_job_run(job_id=job.pk, kind=job.kind) for job in queued]
