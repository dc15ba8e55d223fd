"""What participants of a pairwise study read: How2Score's notion of a critical failure (paper C.1, as in
annotation/base/codebook.py's TRAINING, whose format this follows) asked of two L2s at once."""

from __future__ import annotations

from typing import Any

__all__ = [
    "GOAL_ACKNOWLEDGEMENT",
    "GUIDELINES",
    "QUESTION",
    "SIDE_WORDS",
    "TRAINING",
    "VERDICTS",
    "default_comprehension_questions",
]

QUESTION = "Which L2 has fewer critical failures?"
GOAL_ACKNOWLEDGEMENT = (
    "I've read the goal and understand that my assessment should focus on how well each L2 achieves the goal."
)
# The two L2s are "first" and "second", words true of both layouts: side by side on a wide screen (first on
# the left), one above the other on a phone (first above). The stored values stay "left" and "right".
SIDE_WORDS = {"left": "first", "right": "second"}
VERDICTS = {
    "left": "The first L2 has fewer critical failures",
    "right": "The second L2 has fewer critical failures",
    "both_none": "Neither L2 has a critical failure",
    "both_fail": "Both L2s fail equally (as many critical failures each)",
}
FAILURE_HELP = (
    "List every critical failure you find: say which L2 it is in, describe it, and select the steps of L1 "
    "and of that L2 it concerns. One issue per entry."
)

GUIDELINES = "\n".join(
    [
        "Aim to spend 2-3 minutes per instance.",
        "Please don't use AI, we appreciate your best judgment.",
        "Judge each L2 against the goal and L1, not against the other L2.",
        "Which L2 is shown first means nothing: the order is drawn at random.",
    ]
)

TRAINING = """## What you will do
For each instance you get a goal, a reference procedure L1 that is guaranteed to achieve it, and two \
candidate procedures (two L2s): the first and the second, side by side on a wide screen, one above the \
other on a phone. Read every step of both L2s. Then say which L2 has fewer \
critical failures, and list each critical failure you found, in the L2 it belongs to.

## What counts as a critical failure
A critical failure is an issue that fundamentally prevents the goal from being achieved or makes an L2 \
unusable as a set of followable instructions. Ask yourself: "Will this issue prevent this L2 from achieving \
the goal?"
- Contradiction to the goal or to L1 steps.
- Internal inconsistency, incoherence, severe vagueness.
- Missing critical action.
- Unnecessary, confusing or counterproductive extra action; redundant repetition.

## Acceptable variations (not critical)
- Differences in tone, phrasing or level of detail.
- Differences in ordering that do not affect the outcome.
- Additional steps that are neutral or practical; actions implied by another step.

## Your answer
- The first (or second) L2 has fewer critical failures: list the failures of both; the other L2 has more.
- Neither L2 has a critical failure: list none.
- Both fail equally: list as many critical failures for each L2.
"""


def default_comprehension_questions() -> list[dict[str, Any]]:
    return [
        {
            "question": "The first L2 misses a critical action; the second L2 only uses other words than L1. "
            "What do you answer?",
            "choices": [VERDICTS["left"], VERDICTS["right"], VERDICTS["both_none"]],
            "answer": 1,
        },
        {
            "question": "Does the order the L2s are shown in tell you anything about their quality?",
            "choices": ["Yes: the better one comes first", "No: the order is drawn at random"],
            "answer": 1,
        },
    ]
