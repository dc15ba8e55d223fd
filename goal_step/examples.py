"""What a goal-step example is, apart from how it is built: the three tasks' names, the example, and the
procedure text the builder reads. No numpy: the pages, the importers and the job that queues a build use
these at start-up, and build.py (numpy) is imported only when a set is built."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

STEP_INFERENCE = "step_inference"
GOAL_INFERENCE = "goal_inference"
STEP_ORDERING = "step_ordering"
TASKS = (STEP_INFERENCE, GOAL_INFERENCE, STEP_ORDERING)
N_CANDIDATES = 4

Pk = int | str


@dataclass(frozen=True)
class ProcedureText:
    pk: Pk
    goal: str
    steps: Sequence[str]
    topic: str | None = None
    ordered: bool | None = None


@dataclass
class Example:
    task: str
    prompt: str
    candidates: list[str]
    answer: int
    source_pk: Pk | None = None  # the procedure the prompt and the answer come from
    meta: dict[str, Any] = field(default_factory=dict)


def pk_order(pk: Pk) -> tuple[int, int, str]:
    """How procedures are put in order: int pks by value, then the others by text."""
    return (0, pk, "") if isinstance(pk, int) else (1, 0, str(pk))
