"""Reads of the annotation app: study progress per item and per annotator, and the exports' CSV cells (each
kind writes its own export rows: its `export_rows`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from annotation.base.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Participant,
    Stage,
    Study,
    StudyItem,
)


@dataclass(frozen=True)
class StudyProgress:
    items: int
    target: int  # items x k
    completed: int
    assigned: int
    participants: int
    done: int
    screened_out: int

    @property
    def percent(self) -> float:
        return 100.0 * self.completed / self.target if self.target else 0.0


def study_progress(*, study: Study) -> StudyProgress:
    items = (
        StudyItem.objects.filter(study=study)
        .not_attention_checks()
        .aggregate(
            n=Count("pk"),
            target=Sum("target_annotations"),
            completed=Sum("completed_count"),
            assigned=Sum("assigned_count"),
        )
    )
    people = (
        Participant.objects.counted()
        .filter(study=study)
        .aggregate(
            n=Count("pk"),
            done=Count("pk", filter=Q(stage=Stage.DONE)),
            screened=Count("pk", filter=Q(stage=Stage.SCREENED_OUT)),
        )
    )
    return StudyProgress(
        items=items["n"],
        target=items["target"] or 0,
        completed=items["completed"] or 0,
        assigned=items["assigned"] or 0,
        participants=people["n"],
        done=people["done"],
        screened_out=people["screened"],
    )


def study_unlabelled_reason(*, study: Study) -> str:
    """Why no agreement figure of a study can be computed yet, when none can ("" when some regular item has
    an annotation): the study has no items, no participant has submitted an item, or the only submissions
    are attention checks (which never enter agreement). One query per condition, each reached by a test."""
    if not StudyItem.objects.filter(study=study).not_attention_checks().exists():
        return "This study has no items: its selection chose none."
    submitted = Annotation.objects.filter(study=study).aggregate(
        all=Count("pk"), checks=Count("pk", filter=Q(item__is_attention_check=True))
    )
    if submitted["all"] > submitted["checks"]:
        return ""
    if submitted["checks"]:
        n = submitted["checks"]
        return (
            f"No human label yet: the annotators have submitted only attention checks ({n}), which never "
            "enter agreement."
        )
    entered = Participant.objects.filter(study=study).count()
    who = (
        f"{entered} participant{'s' if entered != 1 else ''} entered, none has submitted an item yet"
        if entered
        else "nobody has entered it yet"
    )
    return f"No human label yet: no annotator has submitted an item of this study ({who})."


def _per_study(queryset: QuerySet[Any, Any], aggregate: Any) -> Subquery:
    return Subquery(
        queryset.filter(study=OuterRef("pk")).order_by().values("study").annotate(n=aggregate).values("n")
    )


def studies_with_progress() -> QuerySet[Study, Study]:
    """Studies with their counts (items, target, completed, participants) in one query."""
    items = StudyItem.objects.not_attention_checks()
    return Study.objects.annotate(
        n_items=Coalesce(_per_study(items, Count("pk")), 0),
        n_target=Coalesce(_per_study(items, Sum("target_annotations")), 0),
        n_completed=Coalesce(_per_study(items, Sum("completed_count")), 0),
        n_participants=Coalesce(_per_study(Participant.objects.counted(), Count("pk")), 0),
    )


def study_items_progress(*, study: Study, listed: tuple[str, ...] = ()) -> QuerySet[StudyItem, StudyItem]:
    """Items with the relations the study page's list shows (`listed`: its kind's `item_listed`), in position
    order; counters are on the rows."""
    active = (
        Assignment.objects.filter(
            item=OuterRef("pk"), status=AssignmentStatus.ACTIVE, participant__is_preview=False
        )
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .values("n")
    )
    # A subquery per item shown, not a join grouped over every item (a study of 10,000 items shows a page).
    return (
        StudyItem.objects.filter(study=study)
        .select_related(*listed)
        .annotate(n_active=Coalesce(Subquery(active), 0))
        .order_by("is_attention_check", "position")
    )


def study_participants_progress(*, study: Study) -> QuerySet[Participant, Participant]:
    return (
        Participant.objects.counted()
        .filter(study=study)
        .annotate(
            n_attention=Count("annotations", filter=Q(annotations__attention_passed__isnull=False)),
            n_attention_passed=Count("annotations", filter=Q(annotations__attention_passed=True)),
        )
        .order_by("created_at", "pk")  # a stable order for the pages
    )


def csv_cell(value: Any) -> Any:
    """Lists and dicts as JSON text in a CSV cell."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value
