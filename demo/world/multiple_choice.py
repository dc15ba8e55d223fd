"""The synthetic demo world's goal-step examples (the wikiHow paper's three tasks) and the multiple-choice
study that validates them, so the demo has one study of that kind answered at setup (the task set the worker
builds from the bench comes later, and needs vectors).

The examples are written from the synthetic procedures as BIG-bench task files, one a task, and imported
through the app's BIG-bench importer into one task set (every example a test example):

- Step Inference: a procedure's goal; one of its steps and three steps of procedures of other topics;
- Goal Inference: one of a procedure's steps; its goal and three goals of procedures of other topics;
- Step Ordering: a procedure's goal and two of its steps; the earlier one is the answer.

Every draw is from a Random seeded by the world's seed, so the same seed gives the same examples. The
simulated annotators (annotators.multiple_choice_answer) choose the answer with their own accuracy, lower on
the examples the world marks hard, so some examples are kept by every worker and some are not (the yield).
"""

from __future__ import annotations

import io
import random
from collections import Counter
from collections.abc import Sequence

from goal_step.bigbench import dumps_bigbench
from goal_step.examples import GOAL_INFERENCE, N_CANDIDATES, STEP_INFERENCE, STEP_ORDERING, TASKS, Example
from goal_step.exports import SOURCE_BIGBENCH, bigbench_examples_add
from goal_step.models import TaskSet
from mining.models import Procedure

EXAMPLES_PER_TASK = 12
FILES = "three BIG-bench files written by manage.py demo_setup from the synthetic procedures"
DESCRIPTION = (
    "Written by manage.py demo_setup from the synthetic procedures as BIG-bench task files, and imported: "
    "synthetic demo data"
)
HARD_SHARE = 0.25  # examples whose distractors are close: annotators often miss them


def task_set_import(name: str, procedures: Sequence[Procedure], *, seed: int) -> TaskSet:
    """A task set of EXAMPLES_PER_TASK test examples of each task, written from `procedures` as BIG-bench
    files and imported through the importer."""
    rng = random.Random(f"{seed}:goal-step")
    task_set = TaskSet.objects.create(
        name=name,
        source=SOURCE_BIGBENCH,
        seed=seed,
        selection={"file": FILES},
        settings={"description": DESCRIPTION},
    )
    topic_of = {procedure.pk: procedure.topic_id for procedure in procedures}
    for task in TASKS:
        examples = task_examples(rng, task, procedures)
        text = dumps_bigbench(examples, name=task)
        bigbench_examples_add(task_set, source=io.BytesIO(text.encode("utf-8")), task=task)
        # The format carries no source: each example's procedure and topic, as the builder records them
        # (the task set's by-topic table).
        for position, example in enumerate(examples):
            assert isinstance(example.source_pk, int)
            task_set.examples.filter(task=task, position=position).update(
                procedure_id=example.source_pk, topic_id=topic_of[example.source_pk]
            )
    return task_set


def task_examples(rng: random.Random, task: str, procedures: Sequence[Procedure]) -> list[Example]:
    """EXAMPLES_PER_TASK examples of `task`, each from its own procedure (so no example repeats), the
    distractors drawn from procedures of other topics, and every step shown one that no other procedure has
    (a step in the same words elsewhere would be right twice)."""
    counts = Counter(step for procedure in procedures for step in procedure.steps)
    own = {p.pk: [step for step in p.steps if counts[step] == 1] for p in procedures}
    usable = [p for p in procedures if len(own[p.pk]) >= 2]
    chosen = rng.sample(usable, EXAMPLES_PER_TASK)
    return [_example(rng, task, procedure, usable, own) for procedure in chosen]


def _example(
    rng: random.Random,
    task: str,
    procedure: Procedure,
    procedures: Sequence[Procedure],
    own: dict[int, list[str]],
) -> Example:
    steps = own[procedure.pk]
    if task == STEP_ORDERING:
        first, second = sorted(rng.sample(steps, 2), key=procedure.steps.index)
        answer = rng.randrange(2)
        candidates = [first, second] if answer == 0 else [second, first]
        return Example(task, procedure.goal, candidates, answer, source_pk=procedure.pk)
    others = _others(rng, procedure, procedures)
    if task == STEP_INFERENCE:
        prompt, right, wrong = procedure.goal, rng.choice(steps), [rng.choice(own[p.pk]) for p in others]
    else:
        assert task == GOAL_INFERENCE
        prompt, right, wrong = rng.choice(steps), procedure.goal, [p.goal for p in others]
    answer = rng.randrange(N_CANDIDATES)
    return Example(task, prompt, [*wrong[:answer], right, *wrong[answer:]], answer, source_pk=procedure.pk)


def _others(rng: random.Random, procedure: Procedure, procedures: Sequence[Procedure]) -> list[Procedure]:
    """N_CANDIDATES - 1 procedures of topics other than `procedure`'s, each of its own topic."""
    by_topic: dict[int | None, list[Procedure]] = {}
    for other in procedures:
        if other.topic_id != procedure.topic_id:
            by_topic.setdefault(other.topic_id, []).append(other)
    topics = rng.sample(sorted(by_topic, key=lambda t: t or 0), N_CANDIDATES - 1)
    return [rng.choice(by_topic[topic]) for topic in topics]


def is_hard(seed: int, task: str, position: int) -> bool:
    """Whether the world made this example hard (the same on every run, whatever the database's ids)."""
    return random.Random(f"{seed}:hard:{task}:{position}").random() < HARD_SHARE
