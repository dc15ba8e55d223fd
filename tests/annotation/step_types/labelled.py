"""Step-types studies with their labels stored directly through the models (StudyItem with a procedure,
Participant, Assignment, Annotation, one StepTypeLabel per candidate), for the agreement and import/export
tests. `table6_study` is the worked example whose figures test_agreement_db.py computes by hand."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from django.utils import timezone

from annotation.base.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Participant,
    Study,
    StudyItem,
)
from annotation.base.registry import StudyKind
from annotation.kinds.step_types.models import StepTypeLabel
from annotation.kinds.step_types.spec import procedure_candidates
from mining.models import Procedure
from tests.factories import make_procedure

FOUR_STEPS = ["Preheat the oven.", "Mix the batter.", "Pour it into the tin.", "Bake for 30 minutes."]
THREE_STEPS = ["Open the hood.", "Check the oil.", "Close the hood."]
Marks = Mapping[str, bool | None]  # marked candidate key -> expert knowledge needed


def pid(name: str) -> str:
    """A Prolific-like PID (24 hex characters) per annotator letter."""
    return f"{ord(name[0]):024x}"


def step_study(slug: str, *, k: int = 3) -> Study:
    return Study.objects.create(
        slug=slug,
        title=f"Step types {slug}",
        kind=StudyKind.STEP_TYPES,
        annotators_per_item=k,
        completion_code="DONE",
        screenout_code="OUT",
    )


def add_item(study: Study, procedure: Procedure, *, attention_expects: str = "") -> StudyItem:
    position = study.items.count() + 1
    if attention_expects:
        return StudyItem.objects.create(
            study=study,
            procedure=procedure,
            subject_key=f"procedure:{procedure.pk}",
            position=position,
            target_annotations=0,
            is_attention_check=True,
            payload={"expects": attention_expects},
        )
    return StudyItem.objects.create(
        study=study,
        procedure=procedure,
        subject_key=f"procedure:{procedure.pk}",
        position=position,
        target_annotations=study.annotators_per_item,
    )


def annotate(
    item: StudyItem, annotator: str, marks: Marks, *, task_expert: bool, attention_passed: bool | None = None
) -> Annotation:
    """A submitted annotation of the item by the annotator: one label per candidate, holding iff marked."""
    assert item.procedure is not None
    study = item.study
    participant, _ = Participant.objects.get_or_create(study=study, prolific_pid=pid(annotator))
    now = timezone.now()
    n_steps = len(item.procedure.steps)
    assignment = Assignment.objects.create(
        study=study,
        participant=participant,
        item=item,
        status=AssignmentStatus.SUBMITTED,
        issued_at=now - timedelta(minutes=2),
        lease_expires_at=now + timedelta(minutes=5),
        goal_acknowledged_at=now - timedelta(minutes=2),
        n_reading_steps=n_steps,
        n_revealed=n_steps,
    )
    annotation = Annotation.objects.create(
        assignment=assignment,
        study=study,
        item=item,
        participant=participant,
        answer={"expert_knowledge": task_expert},
        attention_passed=attention_passed,
        issued_at=assignment.issued_at,
        goal_acknowledged_at=now - timedelta(minutes=2),
        submitted_at=now,
        elapsed_seconds=120.0,
    )
    candidates = procedure_candidates(item.procedure)
    unknown = set(marks) - {c.key for c in candidates}
    assert not unknown, unknown
    StepTypeLabel.objects.bulk_create(
        StepTypeLabel(
            candidate=c,
            annotation=annotation,
            annotator=participant.prolific_pid,
            holds=c.key in marks,
            expert=marks.get(c.key),
        )
        for c in candidates
    )
    return annotation


# The worked example: two 4-step procedures, p1 (Food) and p2 (Car), three annotators A, B, C; C's label on
# p2's sequential:2-3 is missing. Candidates of a 4-step procedure: sequential:0-1, 1-2, 2-3;
# interchangeable@0:1-2, @1:2-3; optional@0:1, @1:2. Marked (expert answer):
MARKS: dict[str, dict[str, dict[str, bool | None]]] = {
    "A": {
        "p1": {"sequential:0-1": True, "sequential:1-2": True, "optional@0:1": True},
        "p2": {"sequential:0-1": False, "sequential:2-3": True, "interchangeable@0:1-2": False},
    },
    "B": {
        "p1": {"sequential:0-1": True, "interchangeable@1:2-3": False, "optional@0:1": False},
        "p2": {
            "sequential:0-1": False,
            "sequential:1-2": True,
            "sequential:2-3": False,
            "interchangeable@0:1-2": False,
        },
    },
    "C": {
        "p1": {"sequential:0-1": False, "sequential:1-2": False, "sequential:2-3": True},
        "p2": {"sequential:1-2": True, "interchangeable@0:1-2": False},
    },
}
TASK_EXPERT = {"A": {"p1": True, "p2": False}, "B": {"p1": True, "p2": True}, "C": {"p1": True, "p2": False}}
MISSING = ("C", "p2", "sequential:2-3")


def table6_study(slug: str = "table6") -> tuple[Study, dict[str, Procedure]]:
    """The worked example, plus one attention-check item (on p1) that A passed (marked only the instructed
    candidate) and B failed (marked everything); their labels must not count."""
    study = step_study(slug)
    procedures = {
        "p1": make_procedure(
            goal="Bake a cake", steps=FOUR_STEPS, topic="Food", source_example_id=f"{slug}-p1"
        ),
        "p2": make_procedure(goal="Fix a car", steps=FOUR_STEPS, topic="Car", source_example_id=f"{slug}-p2"),
    }
    items = {name: add_item(study, procedure) for name, procedure in procedures.items()}
    for annotator, by_procedure in MARKS.items():
        for name, marks in by_procedure.items():
            annotate(items[name], annotator, marks, task_expert=TASK_EXPERT[annotator][name])
    who, name, key = MISSING
    StepTypeLabel.objects.filter(
        annotation__item=items[name], annotator=pid(who), candidate__key=key
    ).delete()
    check = add_item(study, procedures["p1"], attention_expects="optional@1:2")
    everything = {c.key: True for c in procedure_candidates(procedures["p1"])}
    annotate(check, "A", {"optional@1:2": False}, task_expert=False, attention_passed=True)
    annotate(check, "B", everything, task_expert=True, attention_passed=False)
    return study, procedures
