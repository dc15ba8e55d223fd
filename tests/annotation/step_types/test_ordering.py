"""Whether a procedure's order matters, from the step-types labels (#14: Step Ordering only for ordered
procedures): the rule by hand on stored labels, and the task builder reading it where `ordered` is empty."""

from __future__ import annotations

import pytest

from annotation.kinds.step_types.ordering import ordered_from_step_types
from goal_step.selection import selected_procedures
from tests.annotation.step_types.labelled import FOUR_STEPS, add_item, annotate, step_study
from tests.factories import make_procedure

pytestmark = pytest.mark.django_db


def test_the_majority_of_sequential_labels_says_whether_order_matters() -> None:
    study = step_study("order")
    kept = make_procedure(goal="Bake", steps=FOUR_STEPS)  # (0, 1) sequential for 2 of 3: ordered
    loose = make_procedure(goal="Pack", steps=FOUR_STEPS)  # no pair sequential for a majority: not ordered
    split = make_procedure(goal="Tie", steps=FOUR_STEPS)  # k = 2 splits 1-1 on (0, 1): unknown
    unlabelled = make_procedure(goal="Swim", steps=FOUR_STEPS)
    marks = {
        kept: {"A": {"sequential:0-1": False}, "B": {"sequential:0-1": False}, "C": {}},
        loose: {"A": {"sequential:1-2": False}, "B": {}, "C": {}},
        split: {"A": {"sequential:0-1": False}, "B": {}},
    }
    for procedure, by_annotator in marks.items():
        item = add_item(study, procedure)
        for annotator, marked in by_annotator.items():
            annotate(item, annotator, marked, task_expert=False)
    pks = [kept.pk, loose.pk, split.pk, unlabelled.pk]
    assert ordered_from_step_types(pks) == {kept.pk: True, loose.pk: False}
    procedures, _ = selected_procedures({"splits": ["bench"]})
    by_pk = {p.pk: p.ordered for p in procedures}
    assert by_pk[kept.pk] is True and by_pk[loose.pk] is False and by_pk[unlabelled.pk] is None
