"""Prompts for one step-type decision, and reading the model's yes/no."""

from __future__ import annotations

import pytest

from annotation.kinds.step_types.candidates import Candidate, StepType, candidates
from annotation.kinds.step_types.llm import (
    PROMPT_FILES,
    PROMPTS_DIR,
    parse_answer,
    prompt_template,
    step_type_prompt,
)

# Table 7 (B), How to Iron on a Patch - Ironing on the Patch.
PATCH = [
    "Lay the base item on a flat, heat-resistant surface",
    "Place the patch in the position you chose",
    "Heat up an iron",
    "Place a thin towel over the patch",
    "Position the heated iron over the patch and press down",
    "Remove the iron and allow the patch to cool",
]
TASK = "How to Iron on a Patch - Ironing on the Patch"


@pytest.mark.parametrize(
    "text",
    [
        "Yes",
        "Yes.",
        "yes",
        "YES!",
        "  \n\n**Yes**",
        "**Yes**, the two steps can be done in either order.",
        "# Yes",
        "> yes",
        "Answer: yes",
        "Final answer: **YES**",
        "The answer is yes.",
        '{"answer": "yes"}',
        '{"Answer": true}',
        '```json\n{"answer": "Yes"}\n```',
        'Here you go: {"answer": "yes", "reason": "no order is needed"}',
        "<think>maybe no... on reflection</think>\nYes",
        "Yes. Step 2 needs no tools.",
        "I think yes",
    ],
)
def test_it_reads_yes(text: str) -> None:
    assert parse_answer(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "No",
        "no.",
        "**No**",
        "- No",
        "Answer: no",
        "answer:no",
        '{"answer": "no"}',
        '{"answer": false}',
        "No, the order matters.",
        "No. Heating the iron first is fine, yes, but the towel must be placed before pressing.",
    ],
)
def test_it_reads_no(text: str) -> None:
    assert parse_answer(text) is False


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n ",
        "maybe",
        "I cannot tell.",
        "Nope",
        "Yes and no",
        "yes/no",
        "Yes. No.",
        "No. Yes, if the iron is already hot.",  # a later sentence opens with the other verdict
        "It depends: yes if the iron is hot, no otherwise.",
        "Answer: yes. Answer: no",
        '{"answer": "maybe"}',
        '{"answer": null}',
        '{"reason": "unclear"}',
    ],
)
def test_it_gives_none_when_the_answer_cannot_be_told(text: str) -> None:
    assert parse_answer(text) is None


def test_it_has_one_prompt_file_per_type() -> None:
    assert {step_type: (PROMPTS_DIR / name).is_file() for step_type, name in PROMPT_FILES.items()} == {
        step_type: True for step_type in StepType
    }


@pytest.mark.parametrize("n", [2, 3, 6])
def test_it_fills_every_placeholder_of_every_candidate_prompt(n: int) -> None:
    for candidate in candidates(n):
        prompt = step_type_prompt(candidate, task=TASK, steps=PATCH[:n])
        assert "{" not in prompt and "}" not in prompt
        assert prompt.startswith("We analyze step relations in a procedural task.")


def last_example(prompt: str) -> str:
    return prompt.rsplit("Here is another example:", 1)[1]


def test_it_shows_the_sequential_pair_only() -> None:
    shown = last_example(step_type_prompt(Candidate.sequential(3), task=TASK, steps=PATCH))
    assert shown == (
        "\n<<Task: How to Iron on a Patch - Ironing on the Patch,\n"
        "Step sequence: Step 3: Place a thin towel over the patch ->\n"
        "Step 4: Position the heated iron over the patch and press down>>\n"
        "<Is the step pair (3, 4) sequential?>\n"
        "Answer:\n"
    )


def test_it_shows_the_anchor_and_its_two_steps_for_interchangeable() -> None:
    shown = last_example(step_type_prompt(Candidate.interchangeable(0), task=TASK, steps=PATCH))
    assert "Step 0: Lay the base item" in shown and "Step 2: Heat up an iron>>" in shown
    assert "Step 3" not in shown
    assert "<At Step 0, is the step pair (1, 2) interchangeable?>" in shown


def test_it_asks_whether_the_step_after_the_anchor_can_be_skipped() -> None:
    shown = last_example(step_type_prompt(Candidate.optional(3), task=TASK, steps=PATCH))
    assert [
        line.split(":")[0] for line in shown.splitlines() if line.startswith(("Step", "Step sequence"))
    ] == [
        "Step sequence",
        "Step 4",
        "Step 5",
    ]
    assert "Step sequence: Step 3: Place a thin towel over the patch ->" in shown
    assert "<At Step 3, is Step 4 optional, so that one can go from Step 3 directly to Step 5?>" in shown


def test_it_fills_a_stored_template_instead_of_the_file() -> None:
    template = "{task} | {steps} | {anchor} {first} {second}"
    assert step_type_prompt(Candidate.optional(0), task=" T ", steps=["a", "b", "c"], template=template) == (
        "T | Step 0: a ->\nStep 1: b ->\nStep 2: c | 0 1 2"
    )
    assert prompt_template(StepType.SEQUENTIAL) == (PROMPTS_DIR / "sequential.txt").read_text(
        encoding="utf-8"
    )


def test_it_refuses_a_candidate_past_the_procedure() -> None:
    with pytest.raises(ValueError, match="needs step 6"):
        step_type_prompt(Candidate.interchangeable(4), task=TASK, steps=PATCH)
