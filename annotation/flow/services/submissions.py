"""Accepting an annotation under the server's gates (dwell, reading, the lease), or a staff preview's
answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.base.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Participant,
    Study,
    StudyItem,
)
from annotation.base.registry import kind_for
from annotation.base.spec import AnySubmission
from annotation.base.types import Refused
from annotation.flow.services.assignments import _locked_active


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
