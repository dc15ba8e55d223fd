"""Writes of the annotation app: creating studies, moving participants through the flow, leasing items,
recording how an item was read and accepting annotations under the server's gates.

Concurrency: an item is claimed by locking one candidate StudyItem row with
`select_for_update(skip_locked=True)` and bumping its `assigned_count` with a conditional UPDATE
(`assigned_count < target`) that must change exactly one row; the
check constraint on the table and the unique constraints on Assignment and Annotation back it up.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from h2e_site.bounds import OutOfRange

from annotation.db import JSONAppend
from annotation.kinds import kind_for
from annotation.kinds.base import AnySubmission, ReadingTexts
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantStatus,
    ProlificEvent,
    Stage,
    Study,
    StudyItem,
)
from annotation.prolific import RELEASING
from annotation.study_types import ATTENTION_CHECKS, Refused, Selection

# The shared types are defined in study_types.py (below the kinds); callers and tests also reach them here.
from annotation.study_types import SAMPLE_SIZE as SAMPLE_SIZE

# --- Studies ---


def _code() -> str:
    return secrets.token_hex(4).upper()


def default_kind() -> str:
    """The kind of a study made without naming one: Study.kind's default."""
    return str(Study._meta.get_field("kind").get_default())


@transaction.atomic
def study_create(
    *,
    title: str,
    slug: str,
    selection: Selection,
    attention_checks: int = 0,
    created_by: AbstractBaseUser | AnonymousUser | None = None,
    kind: str = "",
    **settings: Any,
) -> Study:
    """A study of `kind` (none: `default_kind()`) over the selection; `attention_checks` extra items ask for
    a stated answer.

    `settings` are Study fields (annotators_per_item, min_dwell_seconds, lease_minutes, ...); the kind's own
    texts (training, guidelines, comprehension questions) fill the ones not given. Every field is checked by
    the model's validators (ranges, slug, Prolific id, the comprehension questions' schema), and a selection
    with no item is refused: ValidationError naming the field, nothing stored."""
    kind = kind or default_kind()
    spec = kind_for(kind)
    settings = {**spec.study_defaults(), **settings}
    settings.setdefault("completion_code", _code())
    settings.setdefault("screenout_code", _code())
    settings.setdefault("attention_failed_code", _code())
    user = created_by if isinstance(created_by, AbstractBaseUser) else None
    try:
        selection.check()
        ATTENTION_CHECKS.check("attention_checks", attention_checks)
    except OutOfRange as bad:
        raise ValidationError({bad.field: bad.message}) from None
    spec.check_selection(selection)
    study = Study(
        title=title,
        slug=slug,
        kind=kind,
        selection=selection.as_json(),
        created_by_id=user.pk if user else None,
        **settings,
    )
    study.full_clean()
    study.save(force_insert=True)
    if spec.items_create(study, selection, attention_checks) == 0:
        raise ValidationError({NON_FIELD_ERRORS: f"No item to annotate: {spec.nothing_selected}"})
    return study


# --- Participants ---


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


# --- Assignments ---


def leases_reclaim(*, study: Study, now: datetime | None = None) -> int:
    """Expire the study's active assignments whose lease has run out and give their slots back."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = list(
            Assignment.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(study=study, status=AssignmentStatus.ACTIVE, lease_expires_at__lt=now)
            .values_list("pk", "item_id", "participant__is_preview")
        )
        _expire(expired)
    return len(expired)


def participant_release(*, participant: Participant) -> int:
    """Expire the participant's active assignment at once (they returned the study on Prolific, or it
    timed out there) and give its slot back: the item goes back to the pool without waiting for its lease.
    How many were released (0 or 1)."""
    with transaction.atomic():
        active = list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(participant=participant, status=AssignmentStatus.ACTIVE)
            .values_list("pk", "item_id", "participant__is_preview")
        )
        _expire(active)
    return len(active)


def participant_status_record(
    *, participant: Participant, status: str, event: ProlificEvent | None = None
) -> int:
    """A Prolific submission status the participant reached, recorded; RETURNED or TIMED-OUT (RELEASING)
    frees their item at once (participant_release). How many items were freed."""
    ParticipantStatus.objects.create(participant=participant, status=status, event=event)
    return participant_release(participant=participant) if status in RELEASING else 0


def _expire(rows: list[tuple[int, int, bool]]) -> None:
    """(assignment, item, preview) rows: the assignments expired, each real one's slot given back."""
    if not rows:
        return
    Assignment.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(status=AssignmentStatus.EXPIRED)
    for _, item_id, preview in rows:
        if preview:
            continue  # a preview took no slot
        StudyItem.objects.filter(pk=item_id, assigned_count__gt=0).update(
            assigned_count=F("assigned_count") - 1
        )


# What the item page reads of every kind's item: the assignment and the item's shared columns; the study's
# kind adds its subject's (StudyKindSpec.item_related / item_page_fields).
ITEM_PAGE_FIELDS = (
    *(f.name for f in Assignment._meta.concrete_fields),
    "item__is_attention_check",
    "item__payload",
)


def assignments_for_item_page(study: Study) -> QuerySet[Assignment, Assignment]:
    """The assignments with what the item page of the study's kind reads, in one query."""
    spec = kind_for(study)
    return Assignment.objects.select_related(*(f"item__{path}" for path in spec.item_related)).only(
        *ITEM_PAGE_FIELDS, *(f"item__{path}" for path in spec.item_page_fields)
    )


def assignment_current(*, participant: Participant) -> Assignment | None:
    """The participant's active assignment, if any (leased, not yet submitted or reclaimed)."""
    active = assignments_for_item_page(participant.study).filter(
        participant=participant, status=AssignmentStatus.ACTIVE
    )
    return active.first()


def _wants_attention_check(participant: Participant, study: Study) -> bool:
    every = study.attention_check_every
    if not every or participant.items_completed == 0 or participant.items_completed % every:
        return False
    done_checks = Assignment.objects.filter(
        participant=participant, status=AssignmentStatus.SUBMITTED, item__is_attention_check=True
    ).count()
    return done_checks < participant.items_completed // every


def _claimable(participant: Participant, *, attention: bool) -> QuerySet[StudyItem, StudyItem]:
    items = StudyItem.objects.filter(study_id=participant.study_id, is_attention_check=attention).exclude(
        pk__in=Assignment.objects.filter(participant=participant).values("item_id")
    )
    if attention or participant.is_preview:  # a preview sees any item, full or not, and takes no slot
        return items.order_by("position")
    # Balanced: the items with the fewest claims first, so the study fills evenly.
    return items.filter(assigned_count__lt=F("target_annotations")).order_by("assigned_count", "position")


def _claim(participant: Participant, *, attention: bool) -> StudyItem | None:
    """Lock one claimable item and take a slot with a conditional UPDATE. Rows other requests hold are
    skipped; if every candidate is held (the last open slots, each in another request's transaction), wait
    once for them rather than tell the participant that nothing is left."""
    return _claim_one(participant, attention=attention, skip_locked=True) or _claim_one(
        participant, attention=attention, skip_locked=False
    )


def _claim_one(participant: Participant, *, attention: bool, skip_locked: bool) -> StudyItem | None:
    spec = kind_for(participant.study)
    candidates = (
        _claimable(participant, attention=attention)
        .select_related(*spec.item_related)
        .defer(*spec.item_unshown)
    )
    if participant.is_preview:
        return candidates.first()
    for item in candidates.select_for_update(skip_locked=skip_locked, of=("self",))[:1]:
        slot = F("assigned_count") + 1
        taken = StudyItem.objects.filter(pk=item.pk)
        if not attention:
            taken = taken.filter(assigned_count__lt=F("target_annotations"))
        if taken.update(assigned_count=slot) == 1:
            return item
    return None


def _quota_reached(participant: Participant, study: Study) -> bool:
    cap = study.items_per_participant
    return bool(cap) and participant.items_completed >= cap


def assignment_next(*, participant: Participant, now: datetime | None = None) -> Assignment | None:
    """The participant's current item, or a newly leased one; None when they have nothing more to do.

    Never gives an item the participant had before, never more than k live claims on an item."""
    current = assignment_current(participant=participant)
    if current is not None:
        return current
    study = participant.study
    if _quota_reached(participant, study):
        return None
    now = now or timezone.now()
    try:
        leased = _lease(participant, study, now)
        if leased is None and leases_reclaim(study=study, now=now):  # expired leases, reclaimed when needed
            leased = _lease(participant, study, now)
    except IntegrityError:  # the same participant's parallel request leased one first: the slot is given back
        return assignment_current(participant=participant)
    return leased


@transaction.atomic
def _lease(participant: Participant, study: Study, now: datetime) -> Assignment | None:
    item = _claim(participant, attention=True) if _wants_attention_check(participant, study) else None
    item = item or _claim(participant, attention=False)
    if item is None:
        return None
    spec = kind_for(study)
    presentation = spec.presentation(item, item.assigned_count)  # the count before this claim
    return Assignment.objects.create(
        study=study,
        participant=participant,
        item=item,
        issued_at=now,
        lease_expires_at=now + timedelta(minutes=study.lease_minutes),
        n_reading_steps=len(spec.reading_steps(item, presentation)),
        presentation=presentation,
    )


def _locked_active(assignment: Assignment) -> Assignment:
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("participant", "study")
        .get(pk=assignment.pk)
    )
    if locked.status == AssignmentStatus.EXPIRED:
        raise Refused(
            "Your time for this item ran out and it was given to someone else. Continue with the next item.",
            status=409,
        )
    return locked


def _refreshed(assignment: Assignment, locked: Assignment) -> Assignment:
    """The caller's object (with its related rows loaded) brought up to date with the locked row."""
    assignment.status = locked.status
    assignment.goal_acknowledged_at = locked.goal_acknowledged_at
    assignment.n_revealed = locked.n_revealed
    assignment.step_revealed_at = locked.step_revealed_at
    return assignment


def _reloaded(assignment: Assignment) -> Assignment:
    """The caller's object with the row's current reading state; 409 if the lease was reclaimed."""
    fresh = Assignment.objects.only(
        "status", "goal_acknowledged_at", "n_revealed", "step_revealed_at", "n_reading_steps"
    ).get(pk=assignment.pk)
    if fresh.status == AssignmentStatus.EXPIRED:
        raise Refused(
            "Your time for this item ran out and it was given to someone else. Continue with the next item.",
            status=409,
        )
    return _refreshed(assignment, fresh)


def assignment_acknowledge_goal(*, assignment: Assignment) -> Assignment:
    """Record when the goal was acknowledged (the first time only), by a conditional UPDATE."""
    now = timezone.now()
    first = Assignment.objects.filter(
        pk=assignment.pk, status=AssignmentStatus.ACTIVE, goal_acknowledged_at__isnull=True
    ).update(goal_acknowledged_at=now)
    if not first:
        return _reloaded(assignment)
    assignment.goal_acknowledged_at = now
    return assignment


def assignment_reveal_step(*, assignment: Assignment, number: int) -> Assignment:
    """Record that reading step `number` (1-based) was read; steps are read in order, each once. One
    conditional UPDATE that changes the row only when this is the next step of an active, acknowledged
    assignment."""
    now = timezone.now().isoformat()
    recorded = Assignment.objects.filter(
        pk=assignment.pk,
        status=AssignmentStatus.ACTIVE,
        goal_acknowledged_at__isnull=False,
        n_revealed=number - 1,
        n_reading_steps__gte=number,
    ).update(n_revealed=F("n_revealed") + 1, step_revealed_at=JSONAppend("step_revealed_at", now))
    if recorded and len(assignment.step_revealed_at) == number - 1:
        assignment.n_revealed, assignment.step_revealed_at = number, [*assignment.step_revealed_at, now]
        return assignment
    fresh = _reloaded(assignment)
    if recorded or fresh.status != AssignmentStatus.ACTIVE or number <= fresh.n_revealed:
        return fresh  # recorded now or before (a double click, a retry)
    texts = _reading_texts(assignment)
    if fresh.goal_acknowledged_at is None:
        raise Refused(texts.before_goal)
    raise Refused(texts.out_of_order.format(next=fresh.n_revealed + 1))


def _reading_texts(assignment: Assignment) -> ReadingTexts:
    """The reading gate's refusals in the words of the assignment's study kind."""
    return kind_for(assignment.study.kind).reading


# --- Submissions ---


def _check_gates(assignment: Assignment, study: Study, now: datetime) -> None:
    waited = (now - assignment.issued_at).total_seconds()
    if waited < study.min_dwell_seconds:
        raise Refused(
            f"Submission opens {study.min_dwell_seconds} s after the item was shown; "
            f"{int(study.min_dwell_seconds - waited) + 1} s to go."
        )
    if assignment.goal_acknowledged_at is None:
        raise Refused(kind_for(study).reading.unacknowledged)
    if not assignment.all_steps_revealed:
        unread = kind_for(study).reading.unread
        raise Refused(unread.format(read=assignment.n_revealed, total=assignment.n_reading_steps))


@dataclass(frozen=True)
class SubmitResult:
    annotation: Annotation
    created: bool  # False: this was a repeat of a submission already stored


def annotation_submit(*, assignment: Assignment, submission: AnySubmission) -> SubmitResult:
    """Store the annotation when every gate holds and the study's kind accepts the answer; a repeated
    submission returns the stored one unchanged."""
    with transaction.atomic():
        locked = _locked_active(assignment)
        if locked.participant.is_preview:  # never an annotation: the view sends previews to preview_submit
            raise Refused("A preview stores no annotation.", status=409)
        if locked.status == AssignmentStatus.SUBMITTED:
            return SubmitResult(Annotation.objects.get(assignment=locked), created=False)
        item, now = _checked(locked, submission)
        annotation = _annotation_store(locked, item, submission, now)
        kind_for(item.study).store_details(annotation, submission, item)
    return SubmitResult(annotation, created=True)


def preview_submit(*, assignment: Assignment, submission: AnySubmission) -> None:
    """A preview's submission: refused as a participant's would be, then the preview moves on to its next
    item; nothing is stored (no Annotation, no item counter moves)."""
    with transaction.atomic():
        locked = _locked_active(assignment)
        if not locked.participant.is_preview:
            raise Refused("Only a preview's submission can be left unstored.", status=409)
        if locked.status == AssignmentStatus.SUBMITTED:
            return
        item, _ = _checked(locked, submission)
        Assignment.objects.filter(pk=locked.pk).update(status=AssignmentStatus.SUBMITTED)
        if not item.is_attention_check:
            Participant.objects.filter(pk=locked.participant_id, is_preview=True).update(
                items_completed=F("items_completed") + 1
            )


def _checked(locked: Assignment, submission: AnySubmission) -> tuple[StudyItem, datetime]:
    """The assignment's item once the gates hold and the kind accepts the answer (Refused otherwise)."""
    item = StudyItem.objects.select_related(*kind_for(locked.study).item_related).get(pk=locked.item_id)
    item.study = locked.study
    now = timezone.now()
    _check_gates(locked, item.study, now)
    kind_for(item.study).check(submission, item, locked)
    return item, now


def _annotation_store(
    assignment: Assignment, item: StudyItem, submission: AnySubmission, now: datetime
) -> Annotation:
    """The Annotation row (the kind's columns and the shared evidence) and the counters it moves."""
    fields = kind_for(item.study).annotation_fields(submission, item)
    elapsed = (now - assignment.issued_at).total_seconds()
    annotation = Annotation.objects.create(
        assignment=assignment,
        study_id=assignment.study_id,
        item=item,
        participant_id=assignment.participant_id,
        **fields.columns(),
        comments=submission.comments.strip(),
        issued_at=assignment.issued_at,
        goal_acknowledged_at=assignment.goal_acknowledged_at or now,  # the gates made sure it is set
        step_revealed_at=assignment.step_revealed_at,
        submitted_at=now,
        elapsed_seconds=elapsed,
        active_seconds=_bounded_active_seconds(submission.active_seconds, elapsed),
        user_agent=submission.user_agent[:1000],
    )
    Assignment.objects.filter(pk=assignment.pk).update(status=AssignmentStatus.SUBMITTED)
    StudyItem.objects.filter(pk=item.pk).update(completed_count=F("completed_count") + 1)
    if not item.is_attention_check:
        Participant.objects.filter(pk=assignment.participant_id).update(
            items_completed=F("items_completed") + 1
        )
    return annotation


def _bounded_active_seconds(active: float | None, elapsed: float) -> float | None:
    """The browser's count of seconds the page was in view, never more than the server's own clock says
    the item was open (nor negative)."""
    return None if active is None else min(max(active, 0.0), elapsed)


def study_set_open(*, study: Study, is_open: bool) -> Study:
    Study.objects.filter(pk=study.pk).update(is_open=is_open)
    study.is_open = is_open
    return study
