"""A small task set of the three goal-step tasks, made directly through the models."""

from __future__ import annotations

from goal_step.models import GoalStepTask, TaskExample, TaskSet, TaskSplit
from tests.factories import make_topic

EXAMPLES = [
    (
        GoalStepTask.STEP_INFERENCE,
        "Prevent Coronavirus",
        ["Wash your cat", "Wash your hands", "Clap", "Eat"],
        1,
    ),
    (
        GoalStepTask.STEP_INFERENCE,
        "Bake bread",
        ["Knead the dough", "Wax the car", "Tune a guitar", "Swim"],
        0,
    ),
    (GoalStepTask.GOAL_INFERENCE, "Knead the dough", ["Play golf", "Bake bread", "Fix a bike", "Paint"], 1),
    (GoalStepTask.STEP_ORDERING, "Make tea", ["Pour the hot water", "Boil the water"], 1),
]


def make_task_set(name: str = "tasks") -> TaskSet:
    topic = make_topic("Food")
    task_set = TaskSet.objects.create(name=name, seed=0)
    for position, (task, prompt, candidates, answer) in enumerate(EXAMPLES):
        TaskExample.objects.create(
            task_set=task_set, task=task, split=TaskSplit.TEST, position=position, prompt=prompt,
            candidates=candidates, answer=answer, topic=topic,
        )  # fmt: skip
    TaskExample.objects.create(
        task_set=task_set, task=GoalStepTask.STEP_INFERENCE, split=TaskSplit.TRAIN, position=99,
        prompt="Train only", candidates=["a", "b", "c", "d"], answer=0,
    )  # fmt: skip
    return task_set
