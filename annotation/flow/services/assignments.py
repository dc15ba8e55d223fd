"""Leasing items to participants (exactly k per item, attention checks on schedule), reclaiming expired
leases, recording how an item was read."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from annotation.base.db import JSONAppend
from annotation.base.models import (
    Assignment,
    AssignmentStatus,
    Participant,
    Study,
    StudyItem,
)
from annotation.base.registry import kind_for
from annotation.base.spec import ReadingTexts
from annotation.base.types import Refused


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
