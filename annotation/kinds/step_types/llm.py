"""Asking a model about one candidate at a time, and reading its yes/no answer.

The prompts (prompts/step_types/<type>.txt, one per type) follow the shape of the SIO paper's two-shot
template (Table 10): the type's definition from §3, one positive and one negative example (from Table 7), then
the input wrapped in << >> ("Task: …, Step sequence: Step i: … -> …", as Table 11 prints it) and the question
in < >. Unlike the paper, which shows the whole step sequence and asks for every pair at once as a list,
each prompt asks for one binary decision and shows only the candidate's context window (§3): the pair for
SEQUENTIAL, the anchor and its two succeeding steps for INTERCHANGEABLE and OPTIONAL. Templates are filled
with `str.format(task=, steps=, anchor=, first=, second=)`; for OPTIONAL `first` is the step that may be
skipped and `second` the step one goes on to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from annotation.kinds.step_types.candidates import Candidate, StepType, context_window
from h2e_site.llm.json_output import find_json_object

__all__ = [
    "PROMPTS_DIR",
    "PROMPT_FILES",
    "parse_answer",
    "prompt_template",
    "step_sequence",
    "step_type_prompt",
]

PROMPTS_DIR = Path(__file__).resolve().parents[3] / "prompts" / "step_types"
PROMPT_FILES = {step_type: f"{step_type.value}.txt" for step_type in StepType}


def prompt_template(step_type: StepType) -> str:
    """The text of the type's prompt file (to be stored and hashed by whoever runs it)."""
    return (PROMPTS_DIR / PROMPT_FILES[step_type]).read_text(encoding="utf-8")


def step_sequence(window: Sequence[tuple[int, str]]) -> str:
    """Steps as the paper's prompts show them: "Step 0: … ->" lines (Table 11)."""
    return " ->\n".join(f"Step {index}: {text.strip()}" for index, text in window)


def step_type_prompt(
    candidate: Candidate, *, task: str, steps: Sequence[str], template: str | None = None
) -> str:
    """The prompt for one candidate of a procedure (its steps 0-based), from `template` or the type's file."""
    text = prompt_template(candidate.step_type) if template is None else template
    second = candidate.steps[1] if len(candidate.steps) > 1 else candidate.steps[0] + 1
    return text.format(
        task=task.strip(),
        steps=step_sequence(context_window(candidate, steps)),
        anchor=candidate.anchor,
        first=candidate.steps[0],
        second=second,
    )


_WORDS = {"yes": True, "no": False, "true": True, "false": False}
_VERDICT = re.compile(r"\b(yes|no)\b")
_MARKER = re.compile(r"\banswer\s*(?:is\s*)?[:=-]?\s*(yes|no)\b")
_MARKUP = re.compile("[*_`#>\"'\u201c\u201d\u2018\u2019\\[\\]{}()]")  # markdown, quotes, brackets
_SENTENCE = re.compile(r"[.!?;\n]+")


def parse_answer(text: str) -> bool | None:
    """A model's yes/no as True/False; None when it cannot be told. In order, after dropping anything up to a
    </think>: a JSON object with an "answer" key decides by its value (true/false, "yes"/"no"); else
    explicit "answer: yes|no" markers decide when they agree; else the whole words yes / no (case and
    markdown ignored) decide when only one of them occurs; else, when both occur, the answer is the word that
    opens the first sentence, provided no sentence opens with the other and the first sentence has only it
    ("Yes. It needs no tools." is yes; "Yes and no", "yes/no" and "maybe" are None)."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    found, answer = _json_answer(text)
    if found:
        return answer
    plain = _MARKUP.sub(" ", text).lower()
    markers = {_WORDS[word] for word in _MARKER.findall(plain)}
    if markers:
        return _only(markers)
    words = {_WORDS[word] for word in _VERDICT.findall(plain)}
    if len(words) < 2:
        return _only(words)
    return _leading_verdict(plain)


def _only(values: set[bool]) -> bool | None:
    return next(iter(values)) if len(values) == 1 else None


def _leading_verdict(plain: str) -> bool | None:
    sentences = [sentence.split() for sentence in _SENTENCE.split(plain) if sentence.split()]
    if not sentences or sentences[0][0].strip(",:") not in ("yes", "no"):
        return None
    openers = {_WORDS[words[0].strip(",:")] for words in sentences if words[0].strip(",:") in ("yes", "no")}
    first_words = {_WORDS[word] for word in _VERDICT.findall(" ".join(sentences[0]))}
    return _only(openers) if len(first_words) == 1 else None


def _json_answer(text: str) -> tuple[bool, bool | None]:
    """(found, answer) for the JSON object of the text (h2e_site.llm.json_output: whole text, code fence or
    embedded) with an "answer" key, in any case."""
    obj = find_json_object(text, required_key="answer")
    key = next((k for k in obj if isinstance(k, str) and k.lower() == "answer"), None) if obj else None
    return (True, _json_value(obj[key])) if obj is not None and key is not None else (False, None)


def _json_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _WORDS.get(_MARKUP.sub(" ", value).strip().strip(".!").strip().lower())
    return None
