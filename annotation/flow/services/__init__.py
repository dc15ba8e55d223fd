"""Writes of the annotation app: creating studies, moving participants through the flow, leasing items,
recording how an item was read and accepting annotations under the server's gates.

Concurrency: an item is claimed by locking one candidate StudyItem row with
`select_for_update(skip_locked=True)` and bumping its `assigned_count` with a conditional UPDATE
(`assigned_count < target`) that must change exactly one row; the
check constraint on the table and the unique constraints on Assignment and Annotation back it up.
"""

from __future__ import annotations

from annotation.base.types import SAMPLE_SIZE, Refused, Selection
from annotation.flow.services.assignments import (
    ITEM_PAGE_FIELDS,
    assignment_acknowledge_goal,
    assignment_current,
    assignment_next,
    assignment_reveal_step,
    assignments_for_item_page,
    leases_reclaim,
    participant_release,
)
from annotation.flow.services.participants import (
    ATTENTION_FAILED,
    COMPLETED,
    SCREENED_OUT,
    CheckResult,
    attention_checks_failed,
    comprehension_grade,
    participant_code,
    participant_consent,
    participant_enter,
    participant_finish,
    participant_finish_training,
    participant_known,
    participant_preview_start,
)
from annotation.flow.services.studies import default_kind, study_create, study_set_open
from annotation.flow.services.submissions import SubmitResult, annotation_submit, preview_submit

__all__ = [
    "ATTENTION_FAILED",
    "COMPLETED",
    "ITEM_PAGE_FIELDS",
    "SAMPLE_SIZE",
    "SCREENED_OUT",
    "CheckResult",
    "Refused",
    "Selection",
    "SubmitResult",
    "annotation_submit",
    "assignment_acknowledge_goal",
    "assignment_current",
    "assignment_next",
    "assignment_reveal_step",
    "assignments_for_item_page",
    "attention_checks_failed",
    "comprehension_grade",
    "default_kind",
    "leases_reclaim",
    "participant_code",
    "participant_consent",
    "participant_enter",
    "participant_finish",
    "participant_finish_training",
    "participant_known",
    "participant_preview_start",
    "participant_release",
    "preview_submit",
    "study_create",
    "study_set_open",
]
