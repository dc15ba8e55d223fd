"""Simulated annotators for the synthetic demo world's studies. Each one walks the participant flow through
the engine's own services (enter, consent, training, comprehension check, then for every item: lease, goal
acknowledged, every reading step revealed in order, submit past the dwell gate), so exactly-k, the leases,
the counters and each kind's answer checks hold as they do for a person.

An annotator sees the latent truth (the planted failure, a step-type candidate that holds) through their own
sensitivity and specificity: several annotators per item then disagree as people do, and Krippendorff's alpha
is moderate, not 1."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, Sum
from django.utils import timezone

from annotation.base.models import Assignment, Participant, Study, StudyItem
from annotation.flow.services import (
    annotation_submit,
    assignment_acknowledge_goal,
    assignment_next,
    assignment_reveal_step,
    comprehension_grade,
    participant_consent,
    participant_enter,
    participant_finish,
    participant_finish_training,
)
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from annotation.kinds.multiple_choice.spec import NONE, MultipleChoiceSubmission
from annotation.kinds.pairwise.spec import PairFailure, PairSubmission, sides
from annotation.kinds.step_types.candidates import StepType, candidates
from annotation.kinds.step_types.spec import StepTypesSubmission
from demo.world import texts
from demo.world.models_under_test import Truth
from demo.world.multiple_choice import is_hard

USER_AGENT = "synthetic demo annotator (manage.py demo_setup)"


@dataclass(frozen=True)
class Annotator:
    """How well one simulated person sees the truth: the share of real failures (or holding candidates) they
    report, and the share of sound L2s (or non-holding candidates) they leave unflagged."""

    pid: str
    sensitivity: float
    specificity: float
    rng: random.Random

    @classmethod
    def drawn(cls, pid: str, seed: int) -> Annotator:
        rng = random.Random(f"{seed}:{pid}")
        careless = rng.random() < 0.12
        sensitivity = rng.uniform(0.55, 0.7) if careless else rng.uniform(0.72, 0.95)
        specificity = rng.uniform(0.7, 0.85) if careless else rng.uniform(0.86, 0.98)
        return cls(pid, sensitivity, specificity, rng)

    def sees(self, holds: bool) -> bool:
        """What they report about something that holds (a failure is there) or does not."""
        return self.rng.random() < self.sensitivity if holds else self.rng.random() >= self.specificity


# The kind's own submission (its frozen dataclass: annotation_submit takes it as the item form's view does).
Answer = Callable[[Annotator, Assignment], Any]


def study_answer(study: Study, answer: Answer, *, seed: int) -> int:
    """Simulated participants ("synthetic-<study slug>-001", ...) answer the study until every regular item
    has its k annotations; how many took part. Named by the study's slug, never its id: a build draws the
    same annotators whatever the database held before."""
    n = start = study.participants.count()
    while _open_slots(study):
        n += 1
        annotator = Annotator.drawn(f"synthetic-{study.slug}-{n:03d}", seed)
        participant = _qualified(study, annotator.pid)
        while (assignment := _leased(participant, study, annotator)) is not None:
            assignment = assignment_acknowledge_goal(assignment=assignment)
            for number in range(1, assignment.n_reading_steps + 1):
                assignment = assignment_reveal_step(assignment=assignment, number=number)
            annotation_submit(assignment=assignment, submission=answer(annotator, assignment))
        participant_finish(participant=participant)
    return n - start


def _open_slots(study: Study) -> int:
    items = StudyItem.objects.filter(study=study).not_attention_checks()
    return items.aggregate(open=Sum(F("target_annotations") - F("assigned_count")))["open"] or 0


def _qualified(study: Study, pid: str) -> Participant:
    participant = participant_enter(
        study=study, prolific_pid=pid, prolific_study_id="", prolific_session_id="", user_agent=USER_AGENT
    )
    participant = participant_consent(participant=participant)
    participant = participant_finish_training(participant=participant)
    answers = {i: question["answer"] for i, question in enumerate(study.comprehension_questions)}
    comprehension_grade(participant=participant, answers=answers)
    participant.refresh_from_db()
    return participant


def _leased(participant: Participant, study: Study, annotator: Annotator) -> Assignment | None:
    """The next item, issued long enough ago that the dwell gate is past (a person reading it). The
    participant is read again first, as each request of theirs would (their count of items done moved)."""
    participant.refresh_from_db(fields=["items_completed", "stage"])
    seconds = study.min_dwell_seconds + annotator.rng.uniform(5, 150)
    return assignment_next(participant=participant, now=timezone.now() - timedelta(seconds=seconds))


def _active_seconds(annotator: Annotator, assignment: Assignment) -> float:
    elapsed = (timezone.now() - assignment.issued_at).total_seconds()
    return round(elapsed * annotator.rng.uniform(0.7, 1.0), 1)


# --- critical failures -------------------------------------------------------------------------------------


def critical_failures_answer(truth: Truth) -> Answer:
    def answer(annotator: Annotator, assignment: Assignment) -> Submission:
        item = assignment.item
        assert item.generation_id is not None
        planted = truth.failures[item.generation_id]
        says = annotator.sees(planted is not None)
        failures = []
        if says:
            reported = planted or texts.false_alarm(annotator.rng, assignment.n_reading_steps)
            failures = [FailureInput(reported.description, reported.l1_steps, reported.l2_steps)]
        return Submission(
            has_failure=says,
            failures=failures,
            active_seconds=_active_seconds(annotator, assignment),
            user_agent=USER_AGENT,
        )

    return answer


# --- pairwise ----------------------------------------------------------------------------------------------


def pairwise_answer(truth: Truth) -> Answer:
    """Each L2 of the pair judged as in the pointwise study; the verdict follows from the failures listed. A
    tie of two sound L2s is now and then broken for the left one (a slight position bias, as people show)."""

    def answer(annotator: Annotator, assignment: Assignment) -> PairSubmission:
        left, right = sides(assignment.item, assignment.presentation)
        listed: list[PairFailure] = []
        for side, generation in (("left", left), ("right", right)):
            planted = truth.failures[generation.pk]
            if annotator.sees(planted is not None):
                reported = planted or texts.false_alarm(annotator.rng, len(generation.predicted_steps))
                listed.append(
                    PairFailure(len(listed), side, reported.description, set(reported.l1_steps),
                                set(reported.l2_steps))
                )  # fmt: skip
        if not listed and annotator.rng.random() < 0.08:
            alarm = texts.false_alarm(annotator.rng, len(right.predicted_steps))
            listed.append(PairFailure(0, "right", alarm.description, set(), set(alarm.l2_steps)))
        return PairSubmission(
            verdict=_pair_verdict(listed),
            left=assignment.presentation.get("left", "a"),
            failures=listed,
            active_seconds=_active_seconds(annotator, assignment),
            user_agent=USER_AGENT,
        )

    return answer


def _pair_verdict(listed: list[PairFailure]) -> str:
    sides_listed = {failure.side for failure in listed}
    if not sides_listed:
        return "both_none"
    if sides_listed == {"left", "right"}:
        return "both_fail"
    return "right" if sides_listed == {"left"} else "left"


# --- step types --------------------------------------------------------------------------------------------

# How often a candidate of each type holds in the synthetic world.
HOLDS_RATE = {StepType.SEQUENTIAL: 0.75, StepType.INTERCHANGEABLE: 0.25, StepType.OPTIONAL: 0.15}


def candidate_holds(seed: int, source_example_id: str, key: str, step_type: StepType) -> bool:
    """The latent truth of one candidate of one procedure (the same on every run)."""
    return random.Random(f"{seed}:step:{source_example_id}:{key}").random() < HOLDS_RATE[step_type]


def step_types_answer(seed: int) -> Answer:
    def answer(annotator: Annotator, assignment: Assignment) -> StepTypesSubmission:
        procedure = assignment.item.procedure
        assert procedure is not None
        marks: dict[str, bool | None] = {
            c.key: annotator.rng.random() < 0.1
            for c in candidates(assignment.n_reading_steps)
            if annotator.sees(candidate_holds(seed, procedure.source_example_id, c.key, c.step_type))
        }
        return StepTypesSubmission(
            marks=marks,
            expert_knowledge=annotator.rng.random() < 0.2,
            active_seconds=_active_seconds(annotator, assignment),
            user_agent=USER_AGENT,
        )

    return answer


# --- multiple choice ---------------------------------------------------------------------------------------

HARD_ACCURACY = 0.6  # the share of their accuracy an annotator keeps on a hard example
NONE_SHARE = 0.25  # of the wrong answers, the share that is "None of the above" (or "Neutral")


def multiple_choice_answer(seed: int) -> Answer:
    """The right candidate with the annotator's accuracy (their sensitivity; less on the world's hard
    examples), else "none" now and then or another candidate; an attention check's named option."""

    def answer(annotator: Annotator, assignment: Assignment) -> MultipleChoiceSubmission:
        item = assignment.item
        example = item.example
        assert example is not None
        choice: int | str
        accuracy = annotator.sensitivity * (HARD_ACCURACY if is_hard(seed, example.task, example.position)
                                            else 1.0)  # fmt: skip
        if item.is_attention_check:
            choice = int(item.payload["expects"])
        elif annotator.rng.random() < accuracy:
            choice = example.answer
        elif annotator.rng.random() < NONE_SHARE:
            choice = NONE
        else:
            choice = annotator.rng.choice([i for i in range(len(example.candidates)) if i != example.answer])
        return MultipleChoiceSubmission(
            choice=choice, active_seconds=_active_seconds(annotator, assignment), user_agent=USER_AGENT
        )

    return answer
