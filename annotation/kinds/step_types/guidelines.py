"""What participants read for the step-transition-type protocol, from the SIO paper: the task overview of
Figure 4, the category definitions of appendix A.1, the expert-knowledge instructions of §4 and A.1, and
examples from Tables 1 and 7. TRAINING uses annotation/base/codebook.py's format ('## ' headings, '- ' list
items, blank lines between paragraphs; rendered by codebook.training_blocks).

Where the text departs from the paper it is said in a comment: the paper's annotators wrote step pairs into
spreadsheet columns ("please note down (i, i+1) in the column ..."), ours tick the candidates the page lists.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GUIDELINES", "TRAINING", "default_comprehension_questions"]

GUIDELINES = "\n".join(
    [
        # §3: "steps beyond its succeeding two-step context are not considered".
        "Judge each step pair or step within its context only: the anchor step and the two steps after it.",
        # A.1, Category Definitions (SEQUENTIAL): "the task will fail if the order is swapped".
        "Mark a pair as sequential only if the task will fail when its order is swapped.",
        # §4: "basing their judgment on general public perception rather than personal experience".
        "Answer the expert-knowledge questions by general public perception, not by your own experience.",
        # §4: "... as relying on commonsense knowledge, even when the task itself is unfamiliar".
        "If expert knowledge is not needed, the judgment relies on commonsense, even for an unfamiliar task.",
    ]
)

# Sections 1-2: Figure 4 ("Overview of the annotation task"), verbatim except "as shown in the left picture"
# (the figure's picture is not reproduced) and the step texts of the Geraniums task, taken from Figure 2.
# Sections 3-5: appendix A.1, "Category Definitions", with "note down ... in the column" replaced by "mark",
# and "iterate until the last second step" made exact: the anchor i needs a step i+2, so the last anchor is
# the third-to-last step (§3: at most |t| - 2 candidates). Section 6: A.1 and §4 (the laundry example).
# Section 7: Table 1 (A) and Table 7 (A)-(C), steps and annotations as printed.
TRAINING = """## What is this task about?
We want to identify various step types in an instructional task, including sequential ordering, \
interchangeable execution and optional step skipping. Understanding these step types would be useful for \
coming up with alternative ways to complete a given task based on end users' context and environment.

Take the task "How to Grow and Care for Geraniums" for instance:
- Determining the step pair (5, 6) cannot be swapped is crucial for the task success.
- Identifying the step pair (1, 2) is interchangeable allows for parallel execution for increased efficiency.
- Realizing Step 2 ("Pick the right time of year to plant your flowers") is not always necessary might \
increase task flexibility. For example, if a user lives in a climate where planting outdoors is possible \
year-round, step 2 can be made optional.

## Annotation overview
Given a task and a referenced step sequence, your tasks are:
- (1) Identify any adjacent step pair (i, i+1) that strictly follows a sequential order.
- (2) At any current step i, identify any succeeding step pair (i+1, i+2) that can be executed \
interchangeably without affecting the completion of the task.
- (3) At any current step i, identify any succeeding step (i+1) that can be made optional and directly \
proceed with the second succeeding step (i+2) without affecting the completion of the task.
- (4) For each step relation annotation in (1)-(3), please note down whether the judgment requires \
expert/domain knowledge based on general conception, regardless of individual experience.
- (5) For the overall task, note down whether it requires expert/domain knowledge to successfully complete \
based on general conception, regardless of individual experience.

If expert/domain knowledge is not needed, commonsense knowledge is applied here for your annotation.

## Sequential (i, i+1)
At any given step i (start from step 0), if you find the step pair (i, i+1) follows a strict sequential \
order (the task will fail if the order is swapped), mark (i, i+1) as sequential.

## Interchangeable (i, (i+1, i+2))
At any given step i (start from step 0 and iterate until the third-to-last step, so that step i+2 exists), \
judge if step i+1 & step i+2 can be interchangeably executed without affecting the task completion. If yes, \
mark (i, (i+1, i+2)) as interchangeable. In this case, (i+1, i+2) can be executed interchangeably when one \
is at step i.

## Optional (i, (i+1), i+2)
At any given step i (start from step 0 and iterate until the third-to-last step, so that step i+2 exists), \
judge if one can omit step i+1 and proceed to step i+2 without affecting the task completion. If yes, mark \
(i, (i+1), i+2) as optional. In this case, (i+1) can be skipped and one can go from step i directly to step \
(i+2) without affecting the task completion.

## Expert knowledge
Step level: for each of your selected step pairs, please answer whether the decision requires expert/domain \
knowledge based on general conception, regardless of individual experience. If a step annotation does not \
require domain/expert knowledge, it could be solved by commonsense knowledge. For example, anyone who does \
not have prior experience in cutting a "durian" would know a step transition Step 0: use a knife to cut a \
"durian" → Step 1: take out the seed of a "durian" can not be swapped based on the commonsense knowledge \
that "Before taking out seeds from a fruit with a spiky hard surface, one has to cut it open".

Task level: after annotating all the step relations, please also answer whether this task generally \
requires expert/domain knowledge. Requiring expert/domain knowledge means one has to follow a step-by-step \
instruction to ensure the task can be completed even with similar prior experiences.

Base your judgment on general public perception rather than personal experience; if expert knowledge is \
not required, the judgment relies on commonsense knowledge, even when the task itself is unfamiliar. For \
example, to "Fix a Laundry Machine", no specialized expertise is required to know that "opening the door" \
must precede "unloading the laundry."

## Examples
How to Make Huevos Rancheros - Assembling the Dish (Food & Entertaining):
- Step 0: Spread about 3 oz (85 g) of refried beans onto each of the tortillas
- Step 1: Place 1 cooked egg onto each of the tortillas
- Step 2: Pour warm salsa over the eggs
- Step 3: Top the dish with avocado, lime juice, cilantro, cheese, or sour cream

Sequential: (1, 2). Interchangeable: (2, 3). Optional: step 2. Expert knowledge: no, for each of them and \
for the task.

How to Make an Avocado Shake - Making the Shake (Food and Entertaining):
- Step 0: Mix the avocado, milk, ice, and sugar in a blender
- Step 1: Blend the ingredients until the mixture is no longer chunky
- Step 2: Line the sides of your glasses with chocolate syrup, and pour the puree into the glasses
- Step 3: Garnish the shake

Sequential: (0, 1), (1, 2), (2, 3). Interchangeable: none. Optional: none. Expert knowledge: no, for each of \
them and for the task.

How to Iron on a Patch - Ironing on the Patch (Home and Garden):
- Step 0: Lay the base item on a flat, heat-resistant surface
- Step 1: Place the patch in the position you chose
- Step 2: Heat up an iron
- Step 3: Place a thin towel over the patch
- Step 4: Position the heated iron over the patch and press down
- Step 5: Remove the iron and allow the patch to cool

Sequential: (0, 1), (3, 4), (4, 5). Interchangeable: (1, 2), (2, 3). Optional: none. Expert knowledge: no, \
for each of them and for the task.

How to Tattoo Leather - Applying the Design to Leather (Hobbies and Crafts):
- Step 0: Test an out of sight portion of the leather
- Step 1: Ink the main outline of your design
- Step 2: Wipe away excess ink as necessary
- Step 3: Add accents and details after the main body of the design
- Step 4: Fill in solid features of the design
- Step 5: Clean off any excess ink and show off your tattooed leather

Sequential: (0, 1), (1, 2), (2, 3), (3, 4), (4, 5). Interchangeable: none. Optional: step 2. Expert \
knowledge: no for the step pairs and the step (the annotators were split on (2, 3)), but the task requires \
it."""


def default_comprehension_questions() -> list[dict[str, Any]]:
    """Questions on the definitions, each answered by the paper's own annotations (cited per question)."""
    return [
        {
            # Table 7 (A): sequential [(0, 1), (1, 2), (2, 3)].
            "question": "How to Make an Avocado Shake. Step 1: Blend the ingredients until the mixture is no "
            "longer chunky. Step 2: Line the sides of your glasses with chocolate syrup, and pour the puree "
            "into the glasses. Is the step pair (1, 2) sequential?",
            "choices": [
                "No: the glasses could be lined first",
                "Yes: the puree poured in step 2 only exists after blending in step 1",
            ],
            "answer": 1,
        },
        {
            # Table 7 (B): interchangeable [(1, 2), (2, 3)].
            "question": "How to Iron on a Patch. At Step 0 (Lay the base item on a flat, heat-resistant "
            "surface), can Step 1 (Place the patch in the position you chose) and Step 2 (Heat up an iron) "
            "be executed in either order without affecting the task completion?",
            "choices": ["Yes: they are interchangeable", "No: they are sequential"],
            "answer": 0,
        },
        {
            # Table 7 (A): interchangeable [] (Step 2 pours the puree made in Step 1).
            "question": "How to Make an Avocado Shake. At Step 0 (Mix the avocado, milk, ice, and sugar in a "
            "blender), can Step 1 (Blend the ingredients until the mixture is no longer chunky) and Step 2 "
            "(Line the sides of your glasses with chocolate syrup, and pour the puree into the glasses) be "
            "executed in either order?",
            "choices": ["Yes: they are interchangeable", "No: the puree must be blended before it is poured"],
            "answer": 1,
        },
        {
            # Table 7 (C): optional [2].
            "question": "How to Tattoo Leather. At Step 1 (Ink the main outline of your design), can Step 2 "
            "(Wipe away excess ink as necessary) be skipped, going directly to Step 3 (Add accents and "
            "details after the main body of the design), without affecting the task completion?",
            "choices": ["No: every step must be done", "Yes: step 2 is optional"],
            "answer": 1,
        },
        {
            # Appendix A.1, "Step Level Expert Knowledge Required?" (the durian example).
            "question": "Step 0: use a knife to cut a durian. Step 1: take out the seed of a durian. Someone "
            "who has never cut a durian is asked whether knowing that these steps cannot be swapped needs "
            "expert/domain knowledge. What is the answer?",
            "choices": [
                "Yes: only someone who has cut a durian knows it",
                "No: commonsense says a fruit with a spiky hard surface has to be cut open before taking "
                "out its seeds",
            ],
            "answer": 1,
        },
        {
            # §4 ("basing their judgment on general public perception rather than personal experience").
            "question": "What should your expert-knowledge answers be based on?",
            "choices": [
                "Whether I personally have done the task before",
                "General public perception, regardless of individual experience",
                "How long the task takes",
            ],
            "answer": 1,
        },
    ]
