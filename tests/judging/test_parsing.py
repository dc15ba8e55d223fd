"""Step extraction (the reference's rules exactly) and judge output parsing (the reference's and more)."""

from __future__ import annotations

import json

import pytest

from judging.parsing import extract_steps, find_json_object, parse_judge_output
from tests.llm_server import (
    MALFORMED_JSON,
    MISSING_CRITICAL_FAILURES,
    OUT_OF_RANGE_STEPS,
    failure,
    fenced,
    in_prose,
    judge_json,
)


@pytest.mark.parametrize(
    ("completion", "steps"),
    [
        ("1. Boil water.\n2. Add pasta.\n3. Drain.", ["Boil water.", "Add pasta.", "Drain."]),
        ("  1) Boil\n\n2: Add\n3 - Drain\n4Stir", ["Boil", "Add", "Drain", "Stir"]),
        ("Sure! Here you go:\n1. Boil\n2. Drain", ["Boil", "Drain"]),  # unnumbered lines dropped
        ("Boil water\n\nDrain it\n", ["Boil water", "Drain it"]),  # no numbers: every non-empty line
        ("1.\n2.\nBoil", ["1.", "2.", "Boil"]),  # numbers with nothing after them are no steps
        ("<think>1. wrong</think>x</think>\n1. Right", ["Right"]),  # after the LAST </think>
        ("1. out\n<answer>1. In\n2. Also</answer><answer>1. Second</answer>", ["In", "Also"]),
        ("<answer>1. No end tag", ["<answer>1. No end tag"]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_it_extracts_steps_as_the_reference_does(completion: str, steps: list[str]) -> None:
    assert extract_steps(completion) == steps


def test_it_extracts_no_steps_from_a_missing_completion() -> None:
    assert extract_steps(None) == []


def test_it_parses_a_bare_judge_answer() -> None:
    text = judge_json([failure("Skips preheating.", l1=[1], l2=[2])], reasoning="Because.")
    parsed = parse_judge_output(text, n_l1=3, n_l2=3)
    assert not parsed.parse_failed
    assert parsed.reasoning == "Because."
    assert parsed.n_failures == 1 and parsed.has_failure
    assert parsed.failures[0].description == "Skips preheating."
    assert (parsed.failures[0].l1_steps, parsed.failures[0].l2_steps) == ([1], [2])
    assert not parsed.failures[0].steps_out_of_range


def test_it_parses_a_pass() -> None:
    parsed = parse_judge_output(judge_json(), n_l1=3, n_l2=3)
    assert (parsed.parse_failed, parsed.n_failures, parsed.has_failure) == (False, 0, False)


@pytest.mark.parametrize(
    "wrap",
    [
        fenced,
        in_prose,
        lambda t: f"<think>Let me think about {{this}}.</think>\n{t}",
        lambda t: f"```\n{t}\n```",
        lambda t: f'Draft: {{"reasoning": "draft"}}\nFinal: {t}',  # the object with critical_failures wins
    ],
    ids=["json-fence", "prose", "think", "bare-fence", "two-objects"],
)
def test_it_finds_the_judge_object_in_wrapped_output(wrap) -> None:
    text = wrap(judge_json([failure(l1=[2], l2=[3])], reasoning="Real."))
    parsed = parse_judge_output(text, n_l1=3, n_l2=3)
    assert not parsed.parse_failed
    assert parsed.reasoning == "Real."
    assert parsed.failures[0].l2_steps == [3]


def test_it_reads_step_numbers_given_as_strings() -> None:
    item = {"failure": "f", "L1_steps": ["3", "L1.2", "step 1"], "L2_steps": ["L2.3", 2.0, "Step 4", "none"]}
    text = json.dumps({"reasoning": "", "critical_failures": [item]})
    parsed = parse_judge_output(text, n_l1=3, n_l2=4)
    assert parsed.failures[0].l1_steps == [3, 2, 1]
    assert parsed.failures[0].l2_steps == [3, 2, 4]
    assert not parsed.failures[0].steps_out_of_range


def test_it_keeps_and_flags_step_numbers_out_of_range() -> None:
    parsed = parse_judge_output(OUT_OF_RANGE_STEPS, n_l1=3, n_l2=3)
    assert not parsed.parse_failed
    assert parsed.failures[0].l1_steps == [99] and parsed.failures[0].l2_steps == [0]
    assert parsed.failures[0].steps_out_of_range


@pytest.mark.parametrize(
    "text",
    [
        MALFORMED_JSON,
        MISSING_CRITICAL_FAILURES,
        "",
        "No JSON here.",
        "[1, 2]",
        '{"critical_failures": "none"}',
    ],
    ids=["malformed", "missing-key", "empty", "prose", "array", "not-a-list"],
)
def test_it_flags_parse_failures(text: str) -> None:
    parsed = parse_judge_output(text, n_l1=3, n_l2=3)
    assert parsed.parse_failed and parsed.has_failure
    assert parsed.n_failures == 0
    assert parsed.problem


def test_it_keeps_the_reasoning_of_an_answer_without_critical_failures() -> None:
    parsed = parse_judge_output(MISSING_CRITICAL_FAILURES, n_l1=3, n_l2=3)
    assert parsed.reasoning == "Looks fine."


def test_it_drops_failure_entries_that_are_not_objects() -> None:
    text = json.dumps({"reasoning": "", "critical_failures": ["oops", failure()]})
    parsed = parse_judge_output(text, n_l1=3, n_l2=3)
    assert parsed.n_failures == 1
    assert "dropped" in parsed.problem


def test_it_finds_nested_braces_inside_strings() -> None:
    obj = {"reasoning": "a } and { inside", "critical_failures": []}
    assert find_json_object(f"text {json.dumps(obj)} more }}") == obj
