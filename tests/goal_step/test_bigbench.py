"""BIG-bench JSON (multiple_choice_grade) export and import."""

from __future__ import annotations

import json
from typing import Any

import pytest

from goal_step.bigbench import (
    BigBenchFormatError,
    dumps_bigbench,
    export_bigbench,
    import_bigbench,
)
from goal_step.build import GOAL_INFERENCE, STEP_INFERENCE, STEP_ORDERING, Example, build_all
from tests.goal_step.synthetic import WordEmbedding, synthetic_procedures


def _fields(examples: list[Example]) -> list[tuple[str, str, list[str], int]]:
    return [(e.task, e.prompt, e.candidates, e.answer) for e in examples]


def _distinct(examples: list[Example]) -> list[Example]:
    """The builder's goal inference can draw the same prompt and candidates twice (a step of the positive
    drawn at random, once per step of the goal); an import refuses the second, so the round trip keeps the
    first of each."""
    seen: set[tuple[str, frozenset[str]]] = set()
    kept = []
    for example in examples:
        key = (example.prompt, frozenset(example.candidates))
        if key not in seen:
            seen.add(key)
            kept.append(example)
    return kept


def test_it_round_trips_built_examples() -> None:
    built, _ = build_all(synthetic_procedures(80, seed=9), embed=WordEmbedding(), seed=4)
    examples = {task: _distinct(rows) for task, rows in built.items()}
    for task in (STEP_INFERENCE, GOAL_INFERENCE, STEP_ORDERING):
        text = dumps_bigbench(examples[task], name=task)
        data = json.loads(text)
        assert (
            data["metrics"] == ["multiple_choice_grade"]
            and data["preferred_score"] == "multiple_choice_grade"
        )
        assert all(
            sorted(e["target_scores"].values()) == [0] * (len(e["target_scores"]) - 1) + [1]
            for e in data["examples"]
        )
        back = import_bigbench(text)
        assert back.name == task and back.keywords == ["common sense", "multiple choice", "zero-shot"]
        assert _fields(back.examples) == _fields(examples[task])


def test_it_round_trips_awkward_text() -> None:
    examples = [
        Example(STEP_INFERENCE, 'Make "café" au lait\nat home', ["Brew ☕", "Heat milk", "Sing", "Dance"], 3),
        Example(STEP_ORDERING, "Goal: Step: nested", ["Which step helps achieve this goal?", "b"], 0),
    ]
    back = import_bigbench(dumps_bigbench(examples, name="mixed", description="", keywords=[]))
    assert _fields(back.examples) == _fields(examples) and back.description == ""


def test_it_keeps_an_unknown_input_whole_with_the_task_name() -> None:
    task = {
        "name": "other_task",
        "description": "d",
        "keywords": [],
        "examples": [{"input": "2 + 2?", "target_scores": {"4": 1, "5": 0}}],
    }
    example = import_bigbench(task).examples[0]
    assert (example.task, example.prompt, example.candidates, example.answer) == (
        "other_task",
        "2 + 2?",
        ["4", "5"],
        0,
    )


def _task(**changes: Any) -> dict[str, Any]:
    good = {
        "input": "Goal: Bake bread\nWhich step helps achieve this goal?",
        "target_scores": {"a": 0, "b": 1},
    }
    task: dict[str, Any] = {
        "name": "t",
        "description": "d",
        "keywords": ["k"],
        "examples": [good, {**good, "input": "Goal: Wash a car\nWhich step helps achieve this goal?"}],
    }
    task.update(changes)
    return task


def _second(example: Any) -> dict[str, Any]:
    return _task(examples=[_task()["examples"][0], example])


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ([], "the task must be a JSON object, got a list"),
        (_task(name=""), "name: expected a non-empty string"),
        (_task(description=None), "description: expected a string, got nothing"),
        (_task(keywords="k"), "keywords: expected a list of strings"),
        (_task(metrics=["exact_str_match"]), "metrics: a multiple-choice task lists 'multiple_choice_grade'"),
        (_task(examples={}), "examples: expected a non-empty list, got an object"),
        (_task(examples=[]), "examples: expected a non-empty list"),
        (_second("x"), r"examples\[1\]: expected an object, got the string 'x'"),
        (_second({"target_scores": {"a": 1, "b": 0}}), r"examples\[1\].input: expected a non-empty string"),
        (
            _second({"input": "q", "target": "a"}),
            r"examples\[1\].target_scores: expected an object, got nothing",
        ),
        (
            _second({"input": "q", "target_scores": {"a": 1}}),
            r"examples\[1\].target_scores: expected 2 to 26 candidates",
        ),
        (
            _second({"input": "q", "target_scores": {"a": 1, "b": 1}}),
            r"examples\[1\].target_scores: expected exactly one",
        ),
        (
            _second({"input": "q", "target_scores": {"a": 0, "b": 0}}),
            r"examples\[1\].target_scores: expected exactly one",
        ),
        (
            _second({"input": "q", "target_scores": {"a": 1, "b": 0.5}}),
            r"examples\[1\].target_scores\['b'\]: expected 0 or 1",
        ),
        (
            _second({"input": "q", "target_scores": {"a": True, "b": 0}}),
            r"examples\[1\].target_scores\['a'\]: expected 0 or 1",
        ),
        (
            _second({"input": "q", "target_scores": {"a": "1", "b": 0}}),
            r"examples\[1\].target_scores\['a'\]: expected 0 or 1",
        ),
    ],
)
def test_it_refuses_malformed_tasks_naming_where(task: Any, message: str) -> None:
    with pytest.raises(BigBenchFormatError, match=message):
        import_bigbench(json.dumps(task))


def test_it_refuses_a_candidate_given_twice_and_broken_json() -> None:
    text = json.dumps(_task()).replace('{"a": 0, "b": 1}', '{"a": 0, "a": 1}', 1)
    with pytest.raises(
        BigBenchFormatError, match=r"examples\[0\].target_scores: candidate 'a' appears twice"
    ):
        import_bigbench(text)
    with pytest.raises(BigBenchFormatError, match="not valid JSON"):
        import_bigbench('{"name": ')
    with pytest.raises(ValueError):  # BigBenchFormatError is a ValueError
        import_bigbench(b"\xff")


def test_it_refuses_to_export_what_the_format_cannot_hold() -> None:
    with pytest.raises(ValueError, match=r"examples\[0\]: repeated candidates"):
        export_bigbench([Example(STEP_ORDERING, "g", ["same", "same"], 0)], name="x")
    with pytest.raises(ValueError, match=r"examples\[0\]: answer 2"):
        export_bigbench([Example(STEP_ORDERING, "g", ["a", "b"], 2)], name="x")
