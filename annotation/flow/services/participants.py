"""A participant's way through a study: entry (or a staff preview), consent, training, the comprehension
check, the completion or screen-out code."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.base.models import (
    Annotation,
    Participant,
    Stage,
    Study,
)
from annotation.base.types import Refused


def participant_known(*, study: Study, prolific_pid: str) -> Participant | None:
    """The study's participant with this PID, whatever its letter case (Prolific IDs are lowercase hex;
    a participant stored before PIDs were normalised may have upper-case letters)."""
    return Participant.objects.filter(study=study, prolific_pid__iexact=prolific_pid).order_by("pk").first()


def participant_enter(
    *, study: Study, prolific_pid: str, prolific_study_id: str, prolific_session_id: str, user_agent: str
) -> Participant:
    """The participant for this PID (normalised to lowercase), created on first arrival; a later arrival, in
    any letter case, keeps its progress."""
    prolific_pid = prolific_pid.lower()
    known = participant_known(study=study, prolific_pid=prolific_pid)
    if known is not None:
        return known
    defaults = {
        "prolific_study_id": prolific_study_id,
        "prolific_session_id": prolific_session_id,
        "user_agent": user_agent[:1000],
    }
    try:
        participant, _ = Participant.objects.get_or_create(
            study=study, prolific_pid=prolific_pid, defaults=defaults
        )
    except IntegrityError:  # two first arrivals at once: the other one created it
        participant = Participant.objects.get(study=study, prolific_pid=prolific_pid)
    return participant


def participant_preview_start(*, study: Study, replacing: int | None = None) -> Participant:
    """A staff member's preview of the study as a participant, from the consent on: a Participant marked
    `is_preview` with a PID no Prolific ID can have. It takes no slot of an item and stores no annotation, so
    it counts nowhere (agreement, exports, exactly-k, the funnel). `replacing`: the pk of the session's
    previous preview of the study, deleted with its assignments (never a real participant)."""
    if replacing is not None:
        Participant.objects.filter(pk=replacing, study=study, is_preview=True).delete()
    return Participant.objects.create(
        study=study, prolific_pid=f"preview-{secrets.token_hex(8)}", is_preview=True, user_agent="preview"
    )


def _advance(participant: Participant, *, expected: Stage, to: Stage, stamp: str) -> Participant:
    """Move to the next stage when the participant is at `expected`; a repeated request changes nothing."""
    if participant.stage == expected:
        Participant.objects.filter(pk=participant.pk, stage=expected).update(
            stage=to, **{stamp: timezone.now()}
        )
        participant.refresh_from_db()
    return participant


def participant_consent(*, participant: Participant) -> Participant:
    return _advance(participant, expected=Stage.CONSENT, to=Stage.TRAINING, stamp="consented_at")


def participant_finish_training(*, participant: Participant) -> Participant:
    return _advance(participant, expected=Stage.TRAINING, to=Stage.COMPREHENSION, stamp="trained_at")


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    wrong: list[int]  # indexes of the questions answered wrongly
    attempts_left: int


@transaction.atomic
def comprehension_grade(*, participant: Participant, answers: dict[int, int]) -> CheckResult:
    """Grade one attempt; passing opens the items, using up the attempts screens the participant out."""
    participant = Participant.objects.select_for_update().select_related("study").get(pk=participant.pk)
    study = participant.study
    if participant.stage != Stage.COMPREHENSION:
        raise Refused("The comprehension check is not open for you now.", status=409)
    questions = study.comprehension_questions
    wrong = [i for i, q in enumerate(questions) if answers.get(i) != q["answer"]]
    participant.comprehension_attempts += 1
    left = max(study.comprehension_attempts - participant.comprehension_attempts, 0)
    if not wrong:
        participant.stage, participant.qualified_at = Stage.ITEMS, timezone.now()
    elif left == 0:
        participant.stage, participant.finished_at = Stage.SCREENED_OUT, timezone.now()
    participant.save(update_fields=["comprehension_attempts", "stage", "qualified_at", "finished_at"])
    return CheckResult(passed=not wrong, wrong=wrong, attempts_left=left)


def participant_finish(*, participant: Participant) -> Participant:
    return _advance(participant, expected=Stage.ITEMS, to=Stage.DONE, stamp="finished_at")


def attention_checks_failed(participant: Participant) -> int:
    """How many attention checks the participant answered against the item's instruction."""
    answers = Annotation.objects.filter(participant=participant).attention_checks()
    return answers.filter(attention_passed=False).count()


COMPLETED, SCREENED_OUT, ATTENTION_FAILED = "completed", "screened_out", "attention_failed"


def participant_code(participant: Participant) -> tuple[str, str]:
    """(what it means, the code) a finished participant takes back to Prolific: the screen-out code after
    failing the comprehension check, the failed-attention-check code after failing at least the study's
    `attention_fail_limit` attention checks, else the completion code."""
    study = participant.study
    if participant.stage == Stage.SCREENED_OUT:
        return SCREENED_OUT, study.screenout_code
    if attention_checks_failed(participant) >= study.attention_fail_limit:
        return ATTENTION_FAILED, study.attention_failed_code
    return COMPLETED, study.completion_code
