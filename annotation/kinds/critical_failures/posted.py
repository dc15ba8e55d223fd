"""The critical-failures item form's POST parsed with h2e_site.inputs (ASCII step numbers in range, text
without control characters): the verdict, the failure entries and the comments, into the kind's Submission.
A value that does not parse is BadInput (a 400 naming the field and the value), never a silent drop."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from django.http import QueryDict

from annotation.base.posted import posted_active_seconds
from h2e_site.inputs import BadInput, ascii_ints, clean_text, one_answer

_FAILURE_KEY = re.compile(r"failure-([0-9]{1,3})-description", re.ASCII)
MAX_ENTRIES = 50


@dataclass(frozen=True)
class FailureInput:
    description: str
    l1_steps: list[int]
    l2_steps: list[int]


@dataclass(frozen=True)
class Submission:
    """What the participant's browser sent; `has_failure` is None when no choice was made."""

    has_failure: bool | None
    failures: list[FailureInput]
    comments: str = ""
    active_seconds: float | None = None
    user_agent: str = ""


@dataclass(frozen=True)
class FailureEntry:
    """A critical-failure entry as the form shows it (posted values kept when a submission is refused)."""

    index: int
    description: str
    l1: set[int]
    l2: set[int]
    error: str = ""  # why the submission was refused, when it concerns this entry

    def with_error(self, error: str) -> FailureEntry:
        return replace(self, error=error)


@dataclass
class PostedItem:
    """What the item form sent, as far as it parsed; `problem` is the first field that did not."""

    choice: str
    failures: list[FailureEntry]
    comments: str
    problem: BadInput | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _entry_indexes(post: QueryDict) -> list[int]:
    indexes = sorted({int(m.group(1)) for key in post if (m := _FAILURE_KEY.fullmatch(key))})
    if len(indexes) > MAX_ENTRIES:
        raise BadInput("failures", f"{len(indexes)} entries", f"at most {MAX_ENTRIES} critical failures")
    return indexes


def _entry(post: QueryDict, index: int, *, n_l1: int, n_l2: int) -> FailureEntry:
    def steps(side: str, n: int) -> set[int]:
        name = f"failure-{index}-{side}"
        expected = (
            f"an {side.upper()} step number (1 to {n})" if n else f"an {side.upper()} step (it has none)"
        )
        return set(ascii_ints(name, post.getlist(name), minimum=1, maximum=n, expected=expected))

    description = clean_text(one_answer(post, f"failure-{index}-description"))
    return FailureEntry(index, description, steps("l1", n_l1), steps("l2", n_l2))


def posted_item(post: QueryDict, *, n_l1: int, n_l2: int) -> PostedItem:
    """The verdict, the failure entries and the comments of a submitted item, each sent once (one_answer).
    Parsing stops at the first field that does not parse (`problem`); the entries parsed before it are kept
    for the form."""
    posted = PostedItem("", [], clean_text(post.get("comments", "")))
    try:
        posted.choice = one_answer(post, "has_failure")  # yes&no is refused, not read as its last value
        posted.comments = clean_text(one_answer(post, "comments"))
        for index in _entry_indexes(post):
            posted.failures.append(_entry(post, index, n_l1=n_l1, n_l2=n_l2))
        if posted.choice not in {"", "yes", "no"}:
            raise BadInput("has_failure", posted.choice, "yes or no")
    except BadInput as problem:
        posted.problem = problem
    return posted


def submission(posted: PostedItem, post: QueryDict, *, user_agent: str) -> Submission:
    return Submission(
        has_failure={"yes": True, "no": False}.get(posted.choice),
        failures=[FailureInput(f.description, sorted(f.l1), sorted(f.l2)) for f in posted.failures],
        comments=posted.comments,
        active_seconds=posted_active_seconds(post),
        user_agent=clean_text(user_agent),
    )


__all__ = ["FailureEntry", "FailureInput", "PostedItem", "Submission", "posted_item", "submission"]
