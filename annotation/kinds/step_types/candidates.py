"""The candidates of the step-transition-type protocol (SIO paper §3): which step pairs and steps of a
procedure with steps s0 … s(n-1) can be SEQUENTIAL, INTERCHANGEABLE or OPTIONAL, their stable keys, and the
context window each decision is made in.

Definitions (0-based step indices, as the paper's):
- SEQUENTIAL: the adjacent pair (s_i, s_i+1), for i = 0 … n-2 (n-1 candidates): "sequential if maintaining
  their order is necessary for successful task completion". Context window: the two steps.
- INTERCHANGEABLE: at anchor s_i, the pair (s_i+1, s_i+2), for i = 0 … n-3 (n-2 candidates): "can be executed
  in any order without impacting task completion". Context window: the anchor and the pair.
- OPTIONAL: at anchor s_i, the step s_i+1, for i = 0 … n-3 (n-2 candidates): "one can skip it and directly
  move to s_i+2 without affecting task completion". Context window: the anchor, the step and s_i+2.

The counts agree with the SIO dataset's sizes: over the 283 test tasks there are 1278 sequential and
995 = 1278 - 283 interchangeable and optional instances (Tables 2 and 5).

Keys ("sequential:3-4", "interchangeable@2:3-4", "optional@2:3") name a candidate inside one procedure;
they are the type, then "@anchor" for the anchored types, then ":" and the step indices joined by "-".
Indices are written in decimal without sign or leading zeros, so every candidate has exactly one key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Candidate", "StepType", "candidates", "context_window"]


class StepType(StrEnum):
    """The three step transition types of the SIO paper (§3)."""

    SEQUENTIAL = "sequential"
    INTERCHANGEABLE = "interchangeable"
    OPTIONAL = "optional"


_INDEX = r"(0|[1-9][0-9]*)"
_KEY = re.compile(
    rf"(?P<type>sequential|interchangeable|optional)(?:@(?P<anchor>{_INDEX}))?:"
    rf"(?P<first>{_INDEX})(?:-(?P<second>{_INDEX}))?"
)


@dataclass(frozen=True)
class Candidate:
    """One decision of the protocol: a step pair (SEQUENTIAL, INTERCHANGEABLE) or a step (OPTIONAL), with
    its anchor step for the anchored types (None for SEQUENTIAL). Inconsistent fields raise ValueError."""

    step_type: StepType
    anchor: int | None
    steps: tuple[int, ...]

    def __post_init__(self) -> None:
        if not _well_formed(self.step_type, self.anchor, self.steps):
            raise ValueError(
                f"not a step-type candidate: {self.step_type!r} anchor={self.anchor!r} steps={self.steps!r}"
            )

    @classmethod
    def sequential(cls, i: int) -> Candidate:
        """The pair (s_i, s_i+1)."""
        return cls(StepType.SEQUENTIAL, None, (i, i + 1))

    @classmethod
    def interchangeable(cls, anchor: int) -> Candidate:
        """The pair (s_anchor+1, s_anchor+2) at the anchor."""
        return cls(StepType.INTERCHANGEABLE, anchor, (anchor + 1, anchor + 2))

    @classmethod
    def optional(cls, anchor: int) -> Candidate:
        """The step s_anchor+1, skipped from the anchor straight to s_anchor+2."""
        return cls(StepType.OPTIONAL, anchor, (anchor + 1,))

    @property
    def key(self) -> str:
        at = "" if self.anchor is None else f"@{self.anchor}"
        return f"{self.step_type.value}{at}:{'-'.join(str(step) for step in self.steps)}"

    @classmethod
    def from_key(cls, key: str) -> Candidate:
        """The candidate a key names; ValueError naming the key when it is not exactly one's key."""
        match = _KEY.fullmatch(key) if isinstance(key, str) else None
        if match is None:
            raise ValueError(f"malformed step-type candidate key: {key!r}")
        anchor = None if match["anchor"] is None else int(match["anchor"])
        steps = tuple(int(group) for group in (match["first"], match["second"]) if group is not None)
        try:
            return cls(StepType(match["type"]), anchor, steps)
        except ValueError:
            raise ValueError(f"malformed step-type candidate key: {key!r}") from None

    @property
    def last_step(self) -> int:
        """The highest step index the decision looks at (its context window's end)."""
        return self.steps[-1] if self.step_type is StepType.SEQUENTIAL else self.steps[0] + 1

    def __str__(self) -> str:
        return self.key


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _well_formed(step_type: object, anchor: object, steps: object) -> bool:
    """SEQUENTIAL: no anchor, steps (i, i+1); INTERCHANGEABLE: anchor i, steps (i+1, i+2); OPTIONAL: anchor i,
    steps (i+1,); every index a non-negative int."""
    if not isinstance(step_type, StepType) or not isinstance(steps, tuple) or not steps:
        return False
    if not all(_is_index(step) for step in steps):
        return False
    first = steps[0]
    if step_type is StepType.SEQUENTIAL:
        return anchor is None and steps == (first, first + 1)
    shape = (first, first + 1) if step_type is StepType.INTERCHANGEABLE else (first,)
    return _is_index(anchor) and anchor == first - 1 and steps == shape


def candidates(n_steps: int) -> list[Candidate]:
    """Every candidate of a procedure with n_steps steps: the n-1 SEQUENTIAL pairs, then the n-2
    INTERCHANGEABLE pairs, then the n-2 OPTIONAL steps, each in step order (none below their minimum)."""
    if n_steps < 0:
        raise ValueError(f"a procedure cannot have {n_steps} steps")
    return [
        *(Candidate.sequential(i) for i in range(n_steps - 1)),
        *(Candidate.interchangeable(i) for i in range(n_steps - 2)),
        *(Candidate.optional(i) for i in range(n_steps - 2)),
    ]


def context_window(candidate: Candidate, steps: Sequence[str]) -> list[tuple[int, str]]:
    """The (index, text) of the steps a model is shown for one decision (§3): the pair for SEQUENTIAL; the
    anchor and its two succeeding steps for INTERCHANGEABLE and OPTIONAL. ValueError when the candidate
    reaches past the procedure's last step."""
    if candidate.last_step >= len(steps):
        raise ValueError(f"{candidate.key} needs step {candidate.last_step}; the procedure has {len(steps)}")
    first = candidate.steps[0] if candidate.anchor is None else candidate.anchor
    return [(i, steps[i]) for i in range(first, candidate.last_step + 1)]
