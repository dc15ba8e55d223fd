"""The model half of a task set's results page: what templates/goal_step/_task_models.html needs.

The task page's view adds `task_models_context(task_set)` to its context and includes the fragment
(`{% include "goal_step/_task_models.html" %}`); its htmx update renders the same fragment.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .models import TaskSet, TaskSplit
from .results import task_models_results


def task_models_context(
    task_set: TaskSet, *, split: str = TaskSplit.TEST, only: Collection[int] | None = None
) -> dict[str, Any]:
    """{"task_models": the accuracy table of the set's split} (three queries); `only`: just these examples,
    e.g. the validated test examples, so that the models are scored on the set the humans are."""
    return {"task_models": task_models_results(task_set, split=split, only=only)}
