"""What every kind's item form and the engine's pages POST, parsed with h2e_site.inputs: the seconds the page
was in view, and the answers of the comprehension check. A value that does not parse is BadInput (a 400
naming the field and the value), never a silent drop. A kind parses its own item form in its module
(annotation/kinds/)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from h2e_site.inputs import ascii_int


def posted_active_seconds(post: QueryDict) -> float | None:
    """The browser's count of seconds the page was in view; None when missing or not a plain number (the
    service bounds it by the server's own clock)."""
    try:
        value = float(post.get("active_seconds", "").strip()[:32])
    except ValueError:
        return None
    return value if 0 <= value < 10**7 else None  # rejects nan, inf and negatives too


def posted_answers(post: QueryDict, questions: list[dict[str, Any]]) -> dict[int, int]:
    """The comprehension answers given (question index -> option index); an answer that is not one of its
    question's options is BadInput; an unanswered question is left out (graded wrong)."""
    answers = {}
    for i, question in enumerate(questions):
        value = post.get(f"q{i}", "")
        if value == "":
            continue
        n_options = len(question.get("choices", []))
        answers[i] = ascii_int(f"q{i}", value, minimum=0, maximum=max(n_options - 1, 0))
    return answers
