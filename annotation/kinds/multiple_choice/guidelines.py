"""What participants of a multiple-choice study read: the paper's HIT instructions (appendix E, Figure 4),
one question per task, and a comprehension check on them."""

from __future__ import annotations

from typing import Any

QUESTIONS = {
    "step_inference": "Which action is the most likely to help accomplish the goal?",
    "goal_inference": "Which goal is this action the most likely to help accomplish?",
    "step_ordering": "Which of the two events most likely comes first in order to accomplish the goal?",
}
PROMPT_LABELS = {"step_inference": "Goal", "goal_inference": "Action", "step_ordering": "Goal"}
# The HIT's last option (Figure 4: "None of the above is likely"; Step Ordering: a neutral option, §3.4).
NONE_LABELS = {
    "step_inference": "None of the above is likely",
    "goal_inference": "None of the above is likely",
    "step_ordering": "Neutral: neither order is more likely",
}

GUIDELINES = "\n".join(
    [
        "Choose the most likely answer; if several seem equally likely, you still have to choose one.",
        "Answer according to common sense, not necessarily what you would personally do.",
        "If the actions or goals are hard to understand, do your best to answer.",
        "Tab and Shift+Tab move between the candidates; Space selects one.",
    ]
)

# Appendix E (Figure 4's instructions), for the three tasks; the example is the paper's own (§3.4, Table 1).
TRAINING = """## What is this task about?
We ask you to infer how actions and goals relate. Each item shows a **goal** with some **actions**, or an \
**action** with some **goals**, or a goal with **two actions** to put in order. Choose the most likely answer.

- If multiple options seem equally likely, you have to choose one, but don't worry too much about it.
- Answer according to your common sense, but not necessarily what you would personally do.
- If the actions or goals are hard to understand, do your best to answer.
- You are encouraged to look up words you don't understand.

## The three kinds of items
- Step inference: a goal and four actions. Which action is the most likely to help accomplish the goal?
- Goal inference: an action and four goals. Which goal is the action the most likely to help accomplish?
- Step ordering: a goal and two actions. Which one most likely comes first?

If none of the options is likely, choose "None of the above is likely" (for ordering: "Neutral").

## An example (the paper's Table 1)
Goal: Prevent Coronavirus. Actions: wash your hands; wash your cat; clap your hands; eat your protein. The \
most likely action to help accomplish the goal is "wash your hands".

## Answering quickly
Use Tab and Shift+Tab to jump back and forth between the candidates, and Space to select one."""


def default_comprehension_questions() -> list[dict[str, Any]]:
    """Questions on the instructions, each answered by the training text."""
    return [
        {
            "question": "Goal: Prevent Coronavirus. Which action is the most likely to help accomplish it?",
            "choices": ["Wash your cat", "Wash your hands", "Clap your hands", "Eat your protein"],
            "answer": 1,
        },
        {
            "question": "Two options seem equally likely. What do you do?",
            "choices": ["Skip the item", "Choose one of them anyway", "Choose both"],
            "answer": 1,
        },
        {
            "question": "Goal: Make tea. Which action most likely comes first: “Pour the hot water over "
            "the tea bag” or “Boil the water”?",
            "choices": ["Pour the hot water over the tea bag", "Boil the water", "Neutral"],
            "answer": 1,
        },
    ]


CONSENT = """This study is run by researchers studying how people and AI systems understand goals and the \
steps that achieve them.

You will read short goals and actions and choose the most likely answer to a question about them.

Taking part is voluntary and you may stop at any time by returning the study on Prolific. What is recorded \
about you is listed below.

Click "I agree" to take part."""


__all__ = ["CONSENT", "GUIDELINES", "NONE_LABELS", "PROMPT_LABELS", "QUESTIONS", "TRAINING"]
