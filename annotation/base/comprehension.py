"""The one schema of a study's comprehension questions, used by the Study model's validator (so the admin),
the study builder and study_create alike: a list of 1-20 questions, each {"question": text, "choices": 2-10
texts, "answer": the index of the right choice}, no other keys, no empty or control-character text.

The schema itself (pydantic) is comprehension_schema.py's, imported when a value is checked, so that pydantic
is not loaded at every start. The builder takes them as plain text (`comprehension_questions_text` writes it,
`..._parse` reads it), one block per question, blocks apart by a blank line:

    Two options seem equally likely. What do you do?
    - Skip the item
    * Choose one of them anyway
    - Choose both

(the right choice marked `*`, the others `-`), or as the JSON list itself (text starting with `[`), measured
before it is parsed.

The check page (annotation/flow/views/annotator.py) and the grading (services.comprehension_grade) rely on it:
a question without an `answer`, or a plain string, would make them fail."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from h2e_site.bounds import json_loads_bounded

MAX_TEXT_CHARS = 100_000  # the JSON text of every question together


def comprehension_questions_validate(value: Any) -> None:
    """The model field's validator: ValidationError saying which question and key is wrong (the schema is
    comprehension_schema.py's, imported here: its library, pydantic, is not loaded at every start)."""
    from annotation.base.comprehension_schema import questions_validate

    questions_validate(value)


def comprehension_questions_parse(text: str) -> list[dict[str, Any]]:
    """Questions from the builder's text (plain blocks, or JSON when it starts with `[` or `{`): measured
    before it is parsed, then validated by the schema. ValidationError naming the question."""
    if len(text) > MAX_TEXT_CHARS:
        raise ValidationError(f"{len(text):,} characters, more than {MAX_TEXT_CHARS:,}", code="size")
    if text.lstrip().startswith(("[", "{")):
        try:
            questions: Any = json_loads_bounded("JSON", text, max_chars=MAX_TEXT_CHARS, max_depth=3)
        except ValueError as exc:
            raise ValidationError(str(exc).removeprefix("JSON: "), code="json") from None
    else:
        questions = [_block(i, block) for i, block in enumerate(_blocks(text), 1)]
    comprehension_questions_validate(questions)
    assert isinstance(questions, list)
    return questions


def comprehension_questions_text(questions: list[dict[str, Any]]) -> str:
    """The questions as the builder's plain text (the right choice marked `*`)."""
    return "\n\n".join(
        "\n".join(
            [q["question"], *(f"{'*' if i == q['answer'] else '-'} {c}" for i, c in enumerate(q["choices"]))]
        )
        for q in questions
    )


def _blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = [[]]
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.strip():
            blocks[-1].append(line.strip())
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _block(number: int, lines: list[str]) -> dict[str, Any]:
    """One question's block: its text, then its choices ("- ", the right one "* ")."""
    question = [line for line in lines if not line.startswith(("- ", "* "))]
    choices = [line for line in lines if line.startswith(("- ", "* "))]
    right = [i for i, line in enumerate(choices) if line.startswith("* ")]
    if not question or lines[: len(question)] != question:
        raise ValidationError(
            f"question {number}: write the question first, then its choices, each on a line starting with "
            "“- ” (the right one with “* ”)",
            code="format",
        )
    if len(right) != 1:
        raise ValidationError(
            f"question {number}: mark exactly one choice as the right one with “* ” ({len(right)} marked)",
            code="format",
        )
    return {"question": " ".join(question), "choices": [c[2:].strip() for c in choices], "answer": right[0]}


__all__ = [
    "comprehension_questions_parse",
    "comprehension_questions_text",
    "comprehension_questions_validate",
]
