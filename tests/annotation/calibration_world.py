"""Calibration samples for tests, built the way the study builder builds them: a critical-failures study
(services.study_create) whose items are the drawn examples of a frame, a CalibrationRound and one
CalibrationDraw per frame example (its probability from judging/sampling.py), then annotated through the real
participant services."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from annotation import services
from annotation.models import CalibrationDesign, CalibrationDraw, CalibrationRound, Study, StudyItem
from judging.models import Generation, Generator, Judge
from tests.annotation.conftest import qualified, read_everything
from tests.factories import make_generation, make_judgment, make_procedure

FAIL = True  # a vote "has a critical failure"
PASS = False


def frame_of(generator: Generator, topics: Sequence[str]) -> list[Generation]:
    """One generation of `generator` per entry of `topics` (its topic), in order."""
    return [
        make_generation(
            generator=generator,
            procedure=make_procedure(goal=f"Goal {i} of {generator.model}", topic=topic),
            predicted_steps=["Do the first thing.", "Do the second thing."],
        )
        for i, topic in enumerate(topics)
    ]


def calibration_study(
    slug: str,
    frame: Sequence[Generation],
    probabilities: Mapping[int, float],
    drawn: Sequence[Generation],
    *,
    k: int = 3,
    design: str = CalibrationDesign.UNIFORM,
) -> Study:
    """A study over the frame's generators whose items are `drawn`, with round 1's probabilities stored for
    every frame example."""
    generator_pks = sorted({g.generator_id for g in frame})
    study = services.study_create(
        title=f"Calibration {slug}",
        slug=slug,
        selection=services.Selection(generator_ids=generator_pks),
        annotators_per_item=k,
        attention_check_every=0,
        items_per_participant=0,
        min_dwell_seconds=0,
    )
    StudyItem.objects.filter(study=study).exclude(generation__in=[g.pk for g in drawn]).delete()
    rnd = CalibrationRound.objects.create(
        study=study, number=1, design=design, size=len(drawn), new_items=len(drawn), seed=1
    )
    drawn_pks = {g.pk for g in drawn}
    CalibrationDraw.objects.bulk_create(
        CalibrationDraw(round=rnd, generation=g, probability=probabilities[g.pk], drawn=g.pk in drawn_pks)
        for g in frame
    )
    return study


def annotate_votes(study: Study, votes: Mapping[int, Sequence[bool]]) -> None:
    """Participant n (1..k) gives votes[generation pk][n - 1] ("has a critical failure") on every item;
    every item of the study must have its votes."""
    k = max(len(v) for v in votes.values())
    for n in range(1, k + 1):
        participant = qualified(study, 7000 + study.pk * 10 + n)
        while (assignment := services.assignment_next(participant=participant)) is not None:
            assignment = read_everything(assignment)
            has_failure = votes[assignment.item.generation_id][n - 1]
            failures = [services.FailureInput("Skips a step", [1], [1])] if has_failure else []
            submission = services.Submission(has_failure, failures, user_agent="test", active_seconds=30.0)
            services.annotation_submit(assignment=assignment, submission=submission)
            participant.refresh_from_db()


def judge_verdicts(judge: Judge, verdicts: Mapping[Generation, bool | None]) -> None:
    """The judge's verdict per generation: True = has a critical failure, False = none, None = a parse
    failure (generations left out get no judgment)."""
    for generation, verdict in verdicts.items():
        failures = [("Wrong order", [1], [1])] if verdict else []
        make_judgment(judge=judge, generation=generation, failures=failures, parse_failed=verdict is None)
