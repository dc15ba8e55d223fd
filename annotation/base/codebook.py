"""The annotators' codebook and a study's defaults, from the paper (§4.3, appendix C.1 and the judge prompt
of §H.3): guidelines, the definition of a critical failure, its examples and the acceptable variations."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MIN_DWELL_SECONDS = 90  # C.1: "Submissions remain closed until at least 90 seconds have elapsed."
ESTIMATED_ITEM_MINUTES = 2.0  # C.1: "Aim to spend 1-2 minutes per instance."
MAX_ITEM_MINUTES = 240.0  # an item of 4 hours is a typo; its lease, 2 + 2X + 2*sqrt(X), stays under a day
MAX_LEASE_MINUTES = 1440  # a day
PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"


def prolific_minimum_allowed_minutes(estimated_minutes: float) -> float:
    """The least `maximum_allowed_time` Prolific takes for an estimated completion time X
    (docs/prolific-api.md §2): 2 + 2X + 2*sqrt(X) minutes (X = 29: 70.77; X = 7: 21.29). The one statement
    of the rule."""
    estimated = max(estimated_minutes, 0.0)
    return 2 + 2 * estimated + 2 * math.sqrt(estimated)


def prolific_max_minutes(estimated_minutes: float) -> int:
    """Prolific's minimum allowed time for X estimated minutes in whole minutes (rounded up): what Prolific
    is sent for a study, and a study's default lease per item (X = 2: 9 minutes)."""
    return math.ceil(prolific_minimum_allowed_minutes(estimated_minutes))


GUIDELINES = "\n".join(
    [
        "Aim to spend 1-2 minutes per instance.",
        "Please don't use AI, we appreciate your best judgment.",
        "You can search unfamiliar terms on Google Images.",
    ]
)

CONSENT = """This study is run by researchers studying how well AI systems write step-by-step instructions.

You will read a goal, a reference procedure (L1) and a procedure to evaluate (L2), and say whether L2 has\
 any critical failure that would prevent it from achieving the goal.

Taking part is voluntary and you may stop at any time by returning the study on Prolific. What is recorded \
about you is listed below.

Click "I agree" to take part."""

# What a study stores about a participant, each with the stored fields it covers (the export's names and the
# Participant row's). The consent page lists these sentences under every study's own consent text, so it says
# what is actually kept; tests/annotation/test_hardening.py checks that every stored field is covered.
RECORDED_ABOUT_YOU: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Your Prolific ID, and the Prolific study and session IDs of the link you followed.",
        ("prolific_pid", "prolific_study_id", "prolific_session_id"),
    ),
    (
        "Your answers: your verdict on each item, the critical failures you describe with the steps you "
        "link, and your comments; your answers to the comprehension check (how many attempts you took).",
        ("has_failure", "n_failures", "critical_failures", "comments", "attention_passed",
         "comprehension_attempts"),
    ),
    (
        "Timings: when you agreed, finished the training and the check, when each item was shown, when you "
        "confirmed its goal, read each L2 step and submitted, and how long the page was in view.",
        ("consented_at", "trained_at", "qualified_at", "finished_at", "issued_at", "goal_acknowledged_at",
         "step_revealed_at", "submitted_at", "elapsed_seconds", "active_seconds"),
    ),
    (
        "Your browser's identification string (its User-Agent: the browser's and operating system's names "
        "and versions), to tell apart display problems.",
        ("user_agent",),
    ),
)  # fmt: skip

GOAL_ACKNOWLEDGEMENT = (
    "I've read the goal and understand that my assessment should focus on how well L2 achieves the goal."
)
CRITICAL_QUESTION = "Do you see any critical failures in L2?"
NO_FAILURE_LABEL = "No critical failures identified"
NO_FAILURE_MEANING = "L2 reasonably achieves the goal."
FAILURE_LABEL = "Critical failures identified"
FAILURE_MEANING = "L2 has major incoherence or deviations from L1 that prevent goal achievement."
FAILURE_HELP = (
    "For each critical failure, provide one description and select the relevant steps from L1 and/or L2. "
    "Do not combine multiple issues into one critical failure."
)
ATTENTION_CHECK_INSTRUCTION = (
    "Attention check: whatever you think of L2, please answer this question with “{label}”."
)

TRAINING = """## What you will do
For each instance you get a goal and two lists of steps, L1 and L2. L1 is one correct procedure that is \
guaranteed to achieve the goal. L2 is a candidate procedure. Decide whether L2 has any critical failures, \
using the goal and L1 as the reference. L1 reliably achieves the goal, but it may not be the only valid way\
 to do so: use it as a reliable reference, not the exclusive solution.

## What counts as a critical failure
A critical failure is an issue that fundamentally prevents the goal from being achieved or makes L2 unusable \
as a set of followable instructions. Ask yourself: "Will this issue prevent L2 from achieving the goal?"
- Contradiction to the goal: an L2 step directly contradicts a condition specified in the goal.
- Contradiction to L1 steps: an L2 step directly contradicts or significantly diverges from an L1 step, \
preventing the goal from being achieved.
- Internal inconsistency: an L2 step is inconsistent with another step within L2.
- Incoherence: L2 has very low readability or logical flow and is hard to follow.
- Severe vagueness: as a whole, L2 lacks so much essential detail from L1 that it becomes basically unusable.
- Missing critical action: an essential L1 step is completely omitted in L2, with no equivalent or implied \
action present.
- Unnecessary, confusing or counterproductive extra action: an L2 step introduces an action not in L1 that\
 is unnecessary or counterproductive.
- Redundant repetition: an L2 step repeats previous steps in L2 where no such repetition exists in L1.

## Acceptable variations (not critical)
- Minor differences in tone, phrasing, or level of detail.
- Differences in emphasis or ordering that do not affect the outcome.
- Additional steps that are neutral or practical.
- Reasonable implicit equivalence, where an omitted action is implied by another step.

Ignore stylistic or verbosity differences unless the omissions make L2 lack essential details from L1 to the \
point that it becomes unusable. Base your decisions on the goal and L1; rely on outside knowledge as little\
 as possible.

## Examples of critical failures
- Goal: prepare Indian-style red lentil dhal using an oven and skillet. L2 soaks the lentils for only 30 \
minutes, whereas L1 soaks them for 8 hours: a critical difference in time.
- Goal: construct a wooden Jacob's Ladder toy. L2 cuts the wood into 5 equal pieces, then arranges them from \
largest to smallest: L2 contradicts itself, equal pieces have no largest or smallest.
- Goal: treat head lice with tea tree oil and apple cider vinegar. L2 step 7 repeats the shampooing step \
almost verbatim, a redundancy not present in L1.
- Goal: prepare an alkyl chloride with thionyl chloride. L2 adds the drying agent before heating the flask, \
while L1 uses it at the very end.
- Goal: housebreak your Bichon Frise. L2 omits praising the dog after outdoor bathroom use, removing the \
positive reinforcement that is critical in L1.
- Goal: establish an objective view of an accident based on evidence. L2 ("Get the basic facts. Do not make \
assumptions. ...") omits so many critical details of L1 that it is practically unusable.

## Examples of acceptable variations
- Ambrosia fruit dip: L2's last step (storing leftovers) is not in L1, but it is a reasonable extra step.
- Preparing a package for shipping: L2 omits removing old labels; it is reasonable to assume a new box.
- Cleaning car wheels: L1 requires identifying the wheel finish; L2 implies it by following the \
manufacturer's recommendations for this finish, a reasonable equivalent.
- Terra cotta pot favors: L1 and L2 write different words on the muslin bags; the difference is trivial.
- Sitting meditation: L2 sits on a chair with feet flat instead of L1's cross-legged posture; both are valid.
- Shutter Priority photos: L2 simplifies the process but keeps every essential action. Had it said \
"appropriate value" instead of "high" or "fast", it would be a critical failure (severe vagueness)."""


def default_comprehension_questions() -> list[dict[str, Any]]:
    return [
        {
            "question": "L2 says to sit on a chair with feet flat on the floor; L1 says to sit cross-legged. "
            "The goal is a basic sitting meditation. Is this a critical failure?",
            "choices": ["Yes: L2 deviates from L1", "No: both are valid ways to achieve the goal"],
            "answer": 1,
        },
        {
            "question": "L2 says to cut a board into 5 pieces of equal size, then to stack them with the "
            "largest piece at the bottom. Is this a critical failure?",
            "choices": ["Yes: L2 contradicts itself", "No: it is only a difference in wording"],
            "answer": 0,
        },
        {
            "question": "What should your assessment focus on?",
            "choices": [
                "Whether L2 uses the same words as L1",
                "Whether L2 achieves the goal",
                "Whether L2 is as long as L1",
            ],
            "answer": 1,
        },
    ]


@dataclass(frozen=True)
class Block:
    """A piece of training text: a heading, a paragraph or a list of items (rendered escaped)."""

    kind: str  # "heading" | "paragraph" | "list"
    lines: tuple[str, ...]


def training_blocks(text: str) -> list[Block]:
    """'## ' lines are headings, runs of '- ' lines are lists, other lines join into paragraphs."""
    blocks: list[Block] = []
    for chunk in text.replace("\r\n", "\n").split("\n"):
        line = chunk.strip()
        kind = "heading" if line.startswith("## ") else "list" if line.startswith("- ") else "paragraph"
        content = line[3:] if kind == "heading" else line[2:] if kind == "list" else line
        if not line:
            blocks.append(Block("break", ()))
        elif blocks and blocks[-1].kind == kind and kind != "heading":
            blocks[-1] = Block(kind, (*blocks[-1].lines, content))
        else:
            blocks.append(Block(kind, (content,)))
    return [block for block in blocks if block.kind != "break"]
