"""Reading each stage's answer: robust to fences and prose, unusable answers become failed verdicts."""

from __future__ import annotations

import json

from mining.stages import bounded_schema, parse_stage_output, stage_prompt
from tests.llm_server import fenced, in_prose

YES = {"answer": "yes", "reason": ""}


def final(**answers: dict[str, str]) -> str:
    questions = ("correctness", "sequential", "no_specific_entity", "goal_steps_alignment")
    return json.dumps({q: answers.get(q, YES) for q in questions})


def test_it_reads_an_extraction_in_a_code_fence() -> None:
    text = fenced(
        json.dumps({"has_valid_process": True, "goal": " Bake bread. ", "steps": ["Mix", " ", "Bake"]})
    )
    verdict = parse_stage_output("extraction", text)
    assert verdict.passed
    assert verdict.payload == {"has_valid_process": True, "goal": "Bake bread.", "steps": ["Mix", "Bake"]}


def test_it_rejects_a_document_without_a_process() -> None:
    verdict = parse_stage_output(
        "extraction", json.dumps({"has_valid_process": False, "goal": "", "steps": []})
    )
    assert (verdict.passed, verdict.reason, verdict.error) == (False, "no valid process in the document", "")


def test_it_passes_an_empty_goal_at_extraction_as_the_reference_does() -> None:
    verdict = parse_stage_output(
        "extraction", json.dumps({"has_valid_process": True, "goal": " ", "steps": ["Mix", "Bake"]})
    )
    assert (verdict.passed, verdict.payload["goal"]) == (True, "")
    no_steps = parse_stage_output(
        "extraction", json.dumps({"has_valid_process": True, "goal": "G", "steps": [" "]})
    )
    assert (no_steps.passed, no_steps.reason) == (False, "has_valid_process is true but there are no steps")


def test_it_fails_an_unparsable_answer_with_the_reason() -> None:
    verdict = parse_stage_output("extraction", '{"has_valid_process": true, "goal": "cut off')
    assert not verdict.passed
    assert verdict.error == "unparsable output: no JSON object in the answer"
    wrong = parse_stage_output("filter", json.dumps({"judgment": "maybe", "reason": ""}))
    assert wrong.error == "unparsable output: judgment is not a boolean"


def test_it_passes_the_llm_filter_only_when_judgment_is_false() -> None:
    assert parse_stage_output("filter", in_prose(json.dumps({"judgment": False, "reason": ""}))).passed
    excluded = parse_stage_output("filter", json.dumps({"judgment": True, "reason": "Named-entity focused"}))
    assert (excluded.passed, excluded.reason) == (False, "Named-entity focused")


def test_it_reads_the_rewrite_and_the_resources() -> None:
    rewrite = parse_stage_output(
        "postprocess", json.dumps({"rewritten_goal": "G", "rewritten_steps": ["a", "b"]})
    )
    assert (rewrite.passed, rewrite.payload) == (True, {"goal": "G", "steps": ["a", "b"]})
    resources = parse_stage_output("resources", json.dumps({"resources": ["oven", "flour", "oven"]}))
    assert resources.payload == {"resources": ["oven", "flour", "oven"]}  # as answered (the reference)


def test_it_passes_final_validation_only_when_all_four_answers_are_yes() -> None:
    assert parse_stage_output("final_filter", final()).passed
    verdict = parse_stage_output("final_filter", final(sequential={"answer": "No", "reason": "Branches."}))
    assert (verdict.passed, verdict.reason) == (False, "sequential: no (Branches.)")
    missing = parse_stage_output("final_filter", json.dumps({"correctness": YES}))
    assert missing.error == "unparsable output: sequential has no yes/no answer"


def test_it_fills_the_prompts_as_the_reference_does() -> None:
    template = "G={goal}\nS={steps}\nR={resources}"
    inputs = {"goal": "Bake", "steps": ["Mix", "Bake"], "resources": ["oven"]}
    assert stage_prompt(template, "final_filter", inputs) == "G=Bake\nS=1. Mix\n2. Bake\nR=- oven"


def test_it_bounds_every_list_for_the_embedded_model() -> None:
    schema = bounded_schema("extraction")
    assert schema["properties"]["steps"]["maxItems"] == 15
    assert schema["required"] == ["has_valid_process", "goal", "steps"]
