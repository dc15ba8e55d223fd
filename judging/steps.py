"""L1/L2 step numbers as critical failures cite them (1-based): the one range check that the judge parser, the
annotators' submissions and the pages that highlight cited steps all use."""

from __future__ import annotations

from collections.abc import Iterable


def step_in_range(number: int | None, n_steps: int) -> bool:
    """Whether `number` names one of `n_steps` steps (1..n_steps)."""
    return number is not None and 1 <= number <= n_steps


def steps_out_of_range(l1_steps: Iterable[int], l2_steps: Iterable[int], *, n_l1: int, n_l2: int) -> bool:
    """Whether a failure cites an L1 or an L2 step that does not exist."""
    return any(not step_in_range(s, n_l1) for s in l1_steps) or any(
        not step_in_range(s, n_l2) for s in l2_steps
    )
