"""A critical failure as the pages show it (a judge's, a human annotator's or an item's gold): its description
and the L1 and L2 steps it cites, each checked against the step list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from judging.steps import step_in_range


class ListedFailure(Protocol):
    """What a page reads of a listed critical failure."""

    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class StepLink:
    """A step number a critical failure points at; `valid` is False when the step list has no such step."""

    label: str
    number: int | None
    valid: bool


@dataclass(frozen=True)
class FailureView:
    failure: (
        ListedFailure  # a judge's (CriticalFailure), a human annotator's (AnnotatedFailure) or the gold's
    )
    l1: list[StepLink]
    l2: list[StepLink]
    source: str = "judge"

    @property
    def token(self) -> str:
        """`judge-<id>` / `human-<id>`: the ?failure= value and the element id suffix (a gold failure has no
        id of its own)."""
        return f"{self.source}-{getattr(self.failure, 'pk', '')}"

    @property
    def l1_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l1 if s.valid)

    @property
    def l2_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l2 if s.valid)


def step_links(values: Any, n_steps: int) -> list[StepLink]:
    """Step numbers as judged (1-based), each checked against the step list; odd values never raise."""
    links = []
    for value in values if isinstance(values, list) else [values]:
        number = None
        if not isinstance(value, bool):
            try:
                number = int(str(value).strip())
            except ValueError:
                number = None
        valid = step_in_range(number, n_steps)
        links.append(StepLink(label=str(value), number=number, valid=valid))
    return links
