"""The auxiliary rewards of the paper's RL runs (§E.4), beside How2Score: the step-format verifier and the
reference-calibrated length reward (issue #32, the first part of the reward service). Pure functions of text
and numbers: the service, the trainers' adapters and the tests call the same ones.

- **Final answer.** A thinking model's text counts from after its last closing think tag (`</think>` by
  default, the reward config's `answer_after`); with no such tag, the whole text. Nothing inside the thinking
  is read by either reward.
- **Step format** (§E.4: "an explicitly numbered list of steps with consecutive numbering starting at 1 ...
  and when an expected step count is provided, that the number of steps matches it"): the final answer's
  numbered lines (`1. ...`, `1) ...`, `1: ...`) must be numbered 1, 2, ..., n in order, n >= 1, and n equal to
  the expected count when one is given. A list starting at 0 or 2, a gap, a repeat or a number out of order
  fails; so does a bullet line (`-`, `*`, `•`) or a sub-step number (`2.1`) anywhere in the answer, since the
  answer must be one flat numbered list. Unnumbered lines around the list (a title, a closing sentence) and
  between its lines (a step wrapped onto two lines) are allowed: the answer *contains* the list.
- **Length** (§E.4): r = |gen| / |ref| in tokens of one fixed tokenizer; R_len(r) = 1 when |r - 1| <= tau,
  else exp(-alpha (|r - 1| - tau) / (1 - tau)); tau = 0.2 and alpha = 5 in the paper.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

THINK_END = "</think>"
TAU = 0.2
ALPHA = 5.0
EDGE = 1e-12  # the band's edges are in it: 130 / 100 tokens is 1.3000000000000000444 in floating point

_NUMBERED = re.compile(r"^\s*(\d+)\s*[.):]\s+\S")
_SUB_STEP = re.compile(r"^\s*\d+\.\d+")
_BULLET = re.compile(r"^\s*[-*•]\s+\S")


def final_answer(text: str, *, answer_after: str = THINK_END) -> str:
    """The text after the last `answer_after` marker (the whole text without one), stripped."""
    if answer_after and answer_after in text:
        text = text.rsplit(answer_after, 1)[1]
    return text.strip()


@dataclass(frozen=True)
class FormatVerdict:
    passed: bool
    n_steps: int  # numbered lines found
    reason: str = ""  # why it failed ("" when it passed)

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0


def step_format(answer: str, *, expected_steps: int | None = None) -> FormatVerdict:
    """The step-format verifier on a final answer (module docstring)."""
    numbers: list[int] = []
    for number, line in enumerate(answer.splitlines(), start=1):
        if _SUB_STEP.match(line):
            return FormatVerdict(False, len(numbers), f"line {number} is a sub-step: {line.strip()[:40]!r}")
        if _BULLET.match(line):
            return FormatVerdict(False, len(numbers), f"line {number} is a bullet: {line.strip()[:40]!r}")
        match = _NUMBERED.match(line)
        if match:
            numbers.append(int(match.group(1)))
    return _checked(numbers, expected_steps)


def _checked(numbers: list[int], expected_steps: int | None) -> FormatVerdict:
    n = len(numbers)
    if not numbers:
        return FormatVerdict(False, 0, "no numbered step")
    wanted = list(range(1, n + 1))
    if numbers != wanted:
        where = next(i for i, (got, want) in enumerate(zip(numbers, wanted, strict=True)) if got != want)
        return FormatVerdict(False, n, f"step {where + 1} is numbered {numbers[where]}, not {wanted[where]}")
    if expected_steps is not None and n != expected_steps:
        return FormatVerdict(False, n, f"{n} steps, not the {expected_steps} expected")
    return FormatVerdict(True, n)


def length_reward(ratio: float, *, tau: float = TAU, alpha: float = ALPHA) -> float:
    """R_len(r) of §E.4 (module docstring); ValueError for a ratio that is not a finite number >= 0, or tau
    outside [0, 1) or alpha < 0."""
    if not (math.isfinite(ratio) and ratio >= 0):
        raise ValueError(f"ratio: {ratio!r} is not a finite number >= 0")
    if not 0 <= tau < 1 or not alpha >= 0:
        raise ValueError(f"tau must lie in [0, 1) and alpha be >= 0, got tau={tau!r}, alpha={alpha!r}")
    distance = abs(ratio - 1)
    if distance <= tau + EDGE:
        return 1.0
    return math.exp(-alpha * (distance - tau) / (1 - tau))


def length_ratio(gen_tokens: int, ref_tokens: int) -> float:
    """r = |gen| / |ref|; ValueError when the reference has no token (the ratio is undefined)."""
    if ref_tokens <= 0 or gen_tokens < 0:
        raise ValueError(f"token counts must be gen >= 0 and ref > 0, got {gen_tokens!r}, {ref_tokens!r}")
    return gen_tokens / ref_tokens


__all__ = ["FormatVerdict", "final_answer", "length_ratio", "length_reward", "step_format"]
