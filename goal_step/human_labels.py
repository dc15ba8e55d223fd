"""What the goal-step tasks learn from people, which only the annotation app (the layer above) knows:

- which test examples of a task set the crowd validated (its multiple-choice studies: every worker answered
  right), for the test JSONL's `validated` flag, its ?validated=1 download and the models' accuracy on the
  validated examples (the task set's page, /api/tasks/<name>/models/?validated=1);
- whether a procedure's order matters, where `Procedure.ordered` is empty (the step-types studies'
  SEQUENTIAL majorities), for which procedures Step Ordering is built from (selection.py).

The data flows down, so it comes through this one seam: each annotation study kind that knows one of them
registers its source when the app loads it (human_labels_update: a function, or its dotted path, imported
when first read). Without it (the goal-step app on its own, or
a test that clears it) no example is known
to be validated (None: "no validation results yet") and no procedure's order is known beyond its field.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

from django.utils.module_loading import import_string

from .models import TaskSet

# A source is a function or its dotted path (a study kind registers its path, so loading the kind imports
# nothing of what the function computes with).
ValidationSource = Callable[[TaskSet], Collection[int] | None] | str
OrderSource = Callable[[list[int]], dict[int, bool]] | str


def _no_validation(task_set: TaskSet) -> None:
    return None


def _no_order(procedure_pks: list[int]) -> dict[int, bool]:
    return {}


@dataclass(frozen=True)
class HumanLabels:
    """validated(task_set): the pks of its validated test examples (None: no validation yet);
    ordered(procedure pks): {pk: whether its order matters} for those people labelled."""

    validated: ValidationSource = _no_validation
    ordered: OrderSource = _no_order


_registered: list[HumanLabels] = []


def human_labels_register(labels: HumanLabels | None) -> HumanLabels | None:
    """Set (or, with None, clear) where the goal-step tasks read what people said; returns what it replaces
    (a test that registers its own puts it back)."""
    before = _registered[0] if _registered else None
    _registered[:] = [labels] if labels is not None else []
    return before


def human_labels_update(
    *, validated: ValidationSource | None = None, ordered: OrderSource | None = None
) -> None:
    """Set some of the sources (a study kind registers the one it knows), keeping the others."""
    labels = _labels()
    if validated is not None:
        labels = replace(labels, validated=validated)
    if ordered is not None:
        labels = replace(labels, ordered=ordered)
    _registered[:] = [labels]


def _labels() -> HumanLabels:
    return _registered[0] if _registered else HumanLabels()


def validated_pks(task_set: TaskSet) -> frozenset[int] | None:
    """The validated test examples of the set (None: no validation results known)."""
    pks = _function(_labels().validated)(task_set)
    return None if pks is None else frozenset(pks)


def ordered_by_people(procedure_pks: list[int]) -> dict[int, bool]:
    """Whether each procedure's order matters, for those people labelled (others left out)."""
    return _function(_labels().ordered)(procedure_pks) if procedure_pks else {}


def _function(source: Callable[..., Any] | str) -> Callable[..., Any]:
    return import_string(source) if isinstance(source, str) else source
