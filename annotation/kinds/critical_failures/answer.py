"""A critical-failures answer's rules, one place for the annotators' item form and the reviewer's gold form:
a verdict; with "critical failures identified", at least one failure, each described and linked to the L1
and/or L2 steps it concerns (paper C.1, figure 10), within the length bounds."""

from __future__ import annotations

from typing import Any

from annotation.base.types import Refused
from annotation.kinds.critical_failures.posted import Submission
from judging.steps import steps_out_of_range

MAX_DESCRIPTION_CHARS = 4000
MAX_COMMENTS_CHARS = 10000
MAX_FAILURES = 50


def check_answer(submission: Submission, *, n_l1: int, n_l2: int) -> None:
    if submission.has_failure is None:
        raise Refused(
            "Choose “No critical failures identified” or “Critical failures identified”.", field="has_failure"
        )
    if len(submission.comments) > MAX_COMMENTS_CHARS:
        raise Refused(
            f"The comments are too long (at most {MAX_COMMENTS_CHARS} characters).", field="comments"
        )
    if not submission.has_failure:
        return
    if not submission.failures:
        raise Refused(
            "Describe at least one critical failure, or choose “No critical failures identified”.",
            field="has_failure",
        )
    if len(submission.failures) > MAX_FAILURES:
        raise Refused(f"Too many critical failures in one submission (at most {MAX_FAILURES}).")
    for n, failure in enumerate(submission.failures, 1):
        _check_failure(n, failure, n_l1=n_l1, n_l2=n_l2)


def _check_failure(n: int, failure: Any, *, n_l1: int, n_l2: int) -> None:
    """A failure is described and linked to the L1 and/or L2 steps it concerns (paper C.1, figure 10)."""
    field = f"failure:{n}"
    if not failure.description.strip():
        raise Refused(f"Critical failure {n} needs a description.", field=field)
    if len(failure.description) > MAX_DESCRIPTION_CHARS:
        raise Refused(
            f"The description of critical failure {n} is too long "
            f"(at most {MAX_DESCRIPTION_CHARS} characters).",
            field=field,
        )
    if not failure.l1_steps and not failure.l2_steps:
        raise Refused(f"Critical failure {n}: select the L1 and/or L2 step(s) it concerns.", field=field)
    if steps_out_of_range(failure.l1_steps, failure.l2_steps, n_l1=n_l1, n_l2=n_l2):
        raise Refused(f"Critical failure {n} links to a step that does not exist.", field=field)


__all__ = ["MAX_COMMENTS_CHARS", "MAX_DESCRIPTION_CHARS", "MAX_FAILURES", "check_answer"]
