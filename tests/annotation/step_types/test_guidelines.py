"""What participants read for the step-type protocol renders, and its check questions are well formed."""

from __future__ import annotations

from annotation.base.codebook import training_blocks
from annotation.kinds.step_types.guidelines import GUIDELINES, TRAINING, default_comprehension_questions


def test_it_renders_the_training_text_as_codebook_blocks() -> None:
    blocks = training_blocks(TRAINING)
    headings = [block.lines[0] for block in blocks if block.kind == "heading"]
    assert headings == [
        "What is this task about?",
        "Annotation overview",
        "Sequential (i, i+1)",
        "Interchangeable (i, (i+1, i+2))",
        "Optional (i, (i+1), i+2)",
        "Expert knowledge",
        "Examples",
    ]
    assert all(line.strip() for block in blocks for line in block.lines)


def test_it_has_one_guideline_per_line() -> None:
    assert len(GUIDELINES.splitlines()) == 4
    assert all(line.strip() == line and line for line in GUIDELINES.splitlines())


def test_it_has_well_formed_comprehension_questions_with_varied_answers() -> None:
    questions = default_comprehension_questions()
    for question in questions:
        assert set(question) == {"question", "choices", "answer"}
        assert 0 <= question["answer"] < len(question["choices"])
    assert len({q["answer"] for q in questions}) > 1
