"""Reading model outputs: L2 steps out of a generator's completion, critical failures out of a judge's.

extract_steps follows the reference `h2e` CLI exactly (h2e-compat.md, Generation rules), so our L2 match
theirs for the same completion. parse_judge_output accepts everything the reference accepts (a bare JSON
object) and more: code fences, prose around the object, <think>…</think> before it, step numbers given as
strings ("3", "L2.3", "step 3"). Unlike the reference, an output without a `critical_failures` list is a parse
failure (the reference silently counts it as a pass), and step numbers outside the L1/L2 range are kept and
flagged rather than trusted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from h2e_site.llm.json_output import find_json_object

from .steps import steps_out_of_range

_NUMBERED_LINE = re.compile(r"^\s*\d+\s*[).:-]?\s*(.*)")
_DIGITS = re.compile(r"\d+")
_STEP_LABEL = re.compile(r"\bL[12]\b", re.IGNORECASE)


def extract_steps(completion: str | None) -> list[str]:
    """The L2 steps in a completion: the reference's rules, line for line (see the module doc)."""
    if not isinstance(completion, str):
        return []
    text = completion.strip()
    if not text:
        return []
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1].strip()
    if "<answer>" in text and "</answer>" in text:
        text = text.split("<answer>", 1)[1].split("</answer>", 1)[0].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    steps = []
    for line in lines:
        match = _NUMBERED_LINE.match(line)
        if match and match.group(1).strip():
            steps.append(match.group(1).strip())
    return steps or lines


@dataclass(frozen=True)
class ParsedFailure:
    description: str
    l1_steps: list[int]
    l2_steps: list[int]
    steps_out_of_range: bool = False


@dataclass(frozen=True)
class ParsedJudgment:
    """What a judge said. parse_failed: no JSON object, or one without a `critical_failures` list."""

    reasoning: str = ""
    failures: list[ParsedFailure] = field(default_factory=list)
    parse_failed: bool = False
    problem: str = ""  # why parsing failed, or what was dropped (kept in Judgment.extra)

    @property
    def n_failures(self) -> int:
        return len(self.failures)

    @property
    def has_failure(self) -> bool:
        return self.n_failures > 0 or self.parse_failed


def parse_judge_output(text: str | None, *, n_l1: int, n_l2: int) -> ParsedJudgment:
    """Parse a judge's raw output against an L1 of n_l1 steps and an L2 of n_l2 steps."""
    obj = find_json_object(text or "", required_key="critical_failures")
    if obj is None:
        return ParsedJudgment(parse_failed=True, problem="no JSON object in the judge output")
    raw_failures = obj.get("critical_failures")
    if not isinstance(raw_failures, list):
        return ParsedJudgment(
            reasoning=_as_text(obj.get("reasoning")),
            parse_failed=True,
            problem="the JSON object has no critical_failures list",
        )
    failures = [_failure(item, n_l1=n_l1, n_l2=n_l2) for item in raw_failures if isinstance(item, dict)]
    dropped = len(raw_failures) - len(failures)
    return ParsedJudgment(
        reasoning=_as_text(obj.get("reasoning")),
        failures=failures,
        problem=f"{dropped} critical_failures entries were not objects and were dropped" if dropped else "",
    )


def _failure(item: dict[str, Any], *, n_l1: int, n_l2: int) -> ParsedFailure:
    l1 = _step_numbers(item.get("L1_steps"))
    l2 = _step_numbers(item.get("L2_steps"))
    out_of_range = steps_out_of_range(l1, l2, n_l1=n_l1, n_l2=n_l2)
    return ParsedFailure(
        description=_as_text(item.get("failure")),
        l1_steps=l1,
        l2_steps=l2,
        steps_out_of_range=out_of_range,
    )


def _step_numbers(value: Any) -> list[int]:
    """Step numbers as ints: 3, 3.0, "3", "L2.3", "step 3", "2-3" (-> 2, 3). A single
    number or string stands for a one-item list; entries without a number are dropped."""
    items = value if isinstance(value, list) else ([] if value is None else [value])
    numbers: list[int] = []
    for item in items:
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            numbers.append(item)
        elif isinstance(item, float) and item.is_integer():
            numbers.append(int(item))
        elif isinstance(item, str):
            numbers.extend(_numbers_in(item))
    return numbers


def _numbers_in(text: str) -> list[int]:
    # "L2.3" / "L1 step 4": the L1/L2 label is not a step number.
    cleaned = _STEP_LABEL.sub(" ", text)
    return [int(m) for m in _DIGITS.findall(cleaned)]


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
