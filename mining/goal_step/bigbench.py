"""Goal-step examples to and from BIG-bench's JSON task format, multiple-choice kind.

A task file is one object: "name", "description", "keywords" (a list of strings), "metrics" and
"preferred_score" ("multiple_choice_grade": the share of examples whose highest-scored candidate is a 1),
and "examples", each {"input": str, "target_scores": {candidate: score}}. Our examples have exactly one
correct candidate, so every score is 0 or 1 and exactly one is 1; the candidates keep their order (JSON
objects are ordered) and must be distinct (they are keys).

The input states the question, so the file can be used zero-shot: "Goal: <goal>\\nWhich step helps achieve
this goal?" (Step Inference), "Step: <step>\\nWhich goal does this step help achieve?" (Goal Inference),
"Goal: <goal>\\nWhich of these steps comes first?" (Step Ordering). Import reads the task and prompt back from
these; an input in another shape is kept whole as the prompt, with the file's name as the task. Only what the
format carries survives a round trip: task, prompt, candidates and answer (not source_pk or meta).

Import refuses malformed files with BigBenchFormatError (a ValueError) naming where: `examples[3].input`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .examples import GOAL_INFERENCE, STEP_INFERENCE, STEP_ORDERING, Example

METRIC = "multiple_choice_grade"
TEMPLATES: dict[str, tuple[str, str]] = {
    STEP_INFERENCE: ("Goal: ", "\nWhich step helps achieve this goal?"),
    GOAL_INFERENCE: ("Step: ", "\nWhich goal does this step help achieve?"),
    STEP_ORDERING: ("Goal: ", "\nWhich of these steps comes first?"),
}
DESCRIPTIONS = {
    STEP_INFERENCE: "Given a goal, choose the step that helps achieve it (Zhang, Lyu & Callison-Burch 2020).",
    GOAL_INFERENCE: "Given a step, choose the goal it helps achieve (Zhang, Lyu & Callison-Burch 2020).",
    STEP_ORDERING: "Given a goal and two of its steps, choose the one that comes first "
    "(Zhang, Lyu & Callison-Burch 2020).",
}
KEYWORDS = ["common sense", "multiple choice", "zero-shot"]


class BigBenchFormatError(ValueError):
    """A BIG-bench file that is not a valid multiple-choice task; the message says where."""


@dataclass
class BigBenchTask:
    name: str
    description: str
    keywords: list[str]
    examples: list[Example] = field(default_factory=list)


def example_input(example: Example) -> str:
    prefix, question = TEMPLATES.get(example.task, ("", ""))
    return prefix + example.prompt + question


def export_bigbench(
    examples: Sequence[Example],
    *,
    name: str,
    description: str | None = None,
    keywords: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The task as a JSON-ready dict. ValueError if an example has repeated candidates or a bad answer."""
    rows = []
    for number, example in enumerate(examples):
        if len(set(example.candidates)) != len(example.candidates):
            raise ValueError(f"examples[{number}]: repeated candidates cannot be target_scores keys")
        if not 0 <= example.answer < len(example.candidates):
            raise ValueError(f"examples[{number}]: answer {example.answer} is not a candidate's position")
        rows.append(
            {
                "input": example_input(example),
                "target_scores": {c: int(i == example.answer) for i, c in enumerate(example.candidates)},
            }
        )
    return {
        "name": name,
        "description": description if description is not None else DESCRIPTIONS.get(name, name),
        "keywords": list(keywords if keywords is not None else KEYWORDS),
        "metrics": [METRIC],
        "preferred_score": METRIC,
        "examples": rows,
    }


def dumps_bigbench(examples: Sequence[Example], **task: Any) -> str:
    return json.dumps(export_bigbench(examples, **task), ensure_ascii=False, indent=2) + "\n"


class _Object(dict[str, Any]):
    """A JSON object that remembers keys it saw twice (json.loads would keep the last silently)."""

    repeated: list[str]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    result = _Object()
    result.repeated = []
    for key, value in pairs:
        if key in result:
            result.repeated.append(key)
        result[key] = value
    return result


def import_bigbench(source: str | bytes | Mapping[str, Any]) -> BigBenchTask:
    """A BIG-bench multiple-choice task file (its text, or the parsed object) as our examples."""
    if isinstance(source, str | bytes):
        try:
            data = json.loads(source, object_pairs_hook=_object)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BigBenchFormatError(f"not valid JSON: {exc}") from exc
    else:
        data = source
    if not isinstance(data, Mapping):
        raise BigBenchFormatError(f"the task must be a JSON object, got {_kind(data)}")
    name = _string(data, "name", "name")
    description = _string(data, "description", "description", allow_empty=True)
    keywords = data.get("keywords")
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise BigBenchFormatError(f"keywords: expected a list of strings, got {_kind(keywords)}")
    metrics = data.get("metrics", [METRIC])
    if not isinstance(metrics, list) or METRIC not in metrics:
        raise BigBenchFormatError(f"metrics: a multiple-choice task lists {METRIC!r}, got {metrics!r}")
    rows = data.get("examples")
    if not isinstance(rows, list) or not rows:
        raise BigBenchFormatError(f"examples: expected a non-empty list, got {_kind(rows)}")
    return BigBenchTask(
        name=name,
        description=description,
        keywords=list(keywords),
        examples=[_example(row, f"examples[{number}]", name) for number, row in enumerate(rows)],
    )


def _example(row: Any, where: str, task_name: str) -> Example:
    if not isinstance(row, Mapping):
        raise BigBenchFormatError(f"{where}: expected an object, got {_kind(row)}")
    text = _string(row, "input", f"{where}.input")
    scores = row.get("target_scores")
    if not isinstance(scores, Mapping):
        raise BigBenchFormatError(f"{where}.target_scores: expected an object, got {_kind(scores)}")
    repeated = getattr(scores, "repeated", [])
    if repeated:
        raise BigBenchFormatError(f"{where}.target_scores: candidate {repeated[0]!r} appears twice")
    if len(scores) < 2:
        raise BigBenchFormatError(f"{where}.target_scores: expected at least 2 candidates, got {len(scores)}")
    for candidate, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, int | float) or score not in (0, 1):
            raise BigBenchFormatError(f"{where}.target_scores[{candidate!r}]: expected 0 or 1, got {score!r}")
    correct = [i for i, score in enumerate(scores.values()) if score == 1]
    if len(correct) != 1:
        raise BigBenchFormatError(
            f"{where}.target_scores: expected exactly one candidate scored 1, got {len(correct)}"
        )
    task, prompt = _parse_input(text, task_name)
    return Example(task=task, prompt=prompt, candidates=list(scores), answer=correct[0])


def _parse_input(text: str, task_name: str) -> tuple[str, str]:
    for task, (prefix, question) in TEMPLATES.items():
        if text.startswith(prefix) and text.endswith(question) and len(text) > len(prefix) + len(question):
            return task, text[len(prefix) : len(text) - len(question)]
    return task_name, text


def _string(data: Mapping[str, Any], key: str, where: str, *, allow_empty: bool = False) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        expected = "a string" if allow_empty else "a non-empty string"
        raise BigBenchFormatError(f"{where}: expected {expected}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else "a value"
