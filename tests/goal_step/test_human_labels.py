"""The one seam through which the goal-step app reads what people said (goal_step/human_labels.py)."""

from __future__ import annotations

from collections.abc import Callable

from annotation.kinds.multiple_choice.validation import task_set_validated_pks
from annotation.kinds.step_types.ordering import ordered_from_step_types
from goal_step.human_labels import HumanLabels, human_labels_register, ordered_by_people, validated_pks
from goal_step.models import TaskSet


def _path(function: Callable[..., object]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def test_annotation_registers_its_studies_once_at_start_up() -> None:
    """By dotted path: loading the kinds imports nothing of what the sources compute with."""
    registered = human_labels_register(None)
    human_labels_register(registered)
    assert registered == HumanLabels(
        validated=_path(task_set_validated_pks), ordered=_path(ordered_from_step_types)
    )


def test_without_a_registration_nothing_is_validated_and_no_order_is_known() -> None:
    before = human_labels_register(None)
    try:
        assert validated_pks(TaskSet(name="tasks")) is None
        assert ordered_by_people([1, 2]) == {}
    finally:
        human_labels_register(before)


def test_it_reads_what_the_registered_source_says() -> None:
    labels = HumanLabels(validated=lambda task_set: [3, 1, 3], ordered=lambda pks: {pks[0]: True})
    before = human_labels_register(labels)
    try:
        assert validated_pks(TaskSet(name="tasks")) == frozenset({1, 3})
        assert ordered_by_people([7, 8]) == {7: True} and ordered_by_people([]) == {}
    finally:
        human_labels_register(before)
