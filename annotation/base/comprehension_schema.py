"""The schema of a study's comprehension questions (annotation/base/comprehension.py says what they are and
reads the builder's text): a list of 1-20 questions, each {"question": text, "choices": 2-10 texts, "answer":
the index of the right choice}, no other keys, no empty or control-character text. Checked with pydantic,
which every start would pay for: comprehension.py imports this module when a value is validated."""

from __future__ import annotations

from typing import Annotated, Any

from django.core.exceptions import ValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator
from pydantic import ValidationError as SchemaError

MAX_QUESTIONS = 20
MAX_CHOICES = 10
MAX_QUESTION_CHARS = 2000
MAX_CHOICE_CHARS = 500


def _printable(text: str) -> str:
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in text):
        raise ValueError("holds a control character (NUL or another)")
    if not text.strip():
        raise ValueError("is empty")
    return text


Text = Annotated[str, AfterValidator(_printable)]


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    question: Annotated[Text, Field(max_length=MAX_QUESTION_CHARS)]
    choices: Annotated[
        list[Annotated[Text, Field(max_length=MAX_CHOICE_CHARS)]],
        Field(min_length=2, max_length=MAX_CHOICES),
    ]
    answer: int

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> Question:
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(
                f"answer {self.answer} is not the index of a choice (0 to {len(self.choices) - 1})"
            )
        return self


QUESTIONS = TypeAdapter(Annotated[list[Question], Field(min_length=1, max_length=MAX_QUESTIONS)])
EXAMPLE = '[{"question": "...", "choices": ["...", "..."], "answer": 0}]'


def questions_validate(value: Any) -> None:
    """ValidationError saying which question and key is wrong."""
    try:
        QUESTIONS.validate_python(value)
    except SchemaError as exc:
        error = exc.errors()[0]
        where = _where(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        raise ValidationError(f"{where}{message}. Expected: {EXAMPLE}", code="schema") from None


def _where(loc: tuple[int | str, ...]) -> str:
    """ "question 2, choice 1: " for the pydantic location (1, "choices", 0)."""
    parts = []
    for i, part in enumerate(loc):
        if isinstance(part, int):
            parts.append(f"question {part + 1}" if i == 0 else f"choice {part + 1}")
        elif not (part == "choices" and i + 1 < len(loc)):
            parts.append(part)
    return ", ".join(parts) + ": " if parts else ""


__all__ = ["MAX_QUESTIONS", "Question", "questions_validate"]
