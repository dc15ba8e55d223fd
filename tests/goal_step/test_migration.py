"""Moving the goal-step models from the mining app into their own keeps every row: run on a database that
holds a task set with examples, a model and its answers, a multiple-choice study over one example and a user
allowed to change task sets, migrated for real."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

BEFORE = [
    ("annotation", "0009_reading_steps"),
    ("mining", "0009_f_request_index"),
]
AFTER = [("goal_step", "0002_own_tables")]
OLD_TABLES = {"mining_taskset", "mining_taskexample", "mining_taskmodel", "mining_taskanswer"}
NEW_TABLES = {"goal_step_taskset", "goal_step_taskexample", "goal_step_taskmodel", "goal_step_taskanswer"}


def _tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def _old_rows(apps: Any) -> dict[str, Any]:
    """A task set with two examples (one on a procedure), a model answering one, a study item on the other,
    and a user holding mining.change_taskset."""
    topic = apps.get_model("mining", "Topic").objects.create(name="Home")
    procedure = apps.get_model("mining", "Procedure").objects.create(goal="Bake", steps=["Mix", "Bake"])
    task_set = apps.get_model("mining", "TaskSet").objects.create(name="tasks", seed=3, funnel={"a": 1})
    Example = apps.get_model("mining", "TaskExample")
    first = Example.objects.create(
        task_set=task_set, task="step_inference", position=0, prompt="Bake", candidates=["Mix", "Swim"],
        answer=0, procedure=procedure, topic=topic,
    )  # fmt: skip
    second = Example.objects.create(
        task_set=task_set,
        task="step_ordering",
        position=0,
        prompt="Bake",
        candidates=["Mix", "Bake"],
        answer=0,
    )
    model = apps.get_model("mining", "TaskModel").objects.create(model_id="m1", model="smol")
    answer = apps.get_model("mining", "TaskAnswer").objects.create(model=model, example=first, choice=1)
    study = apps.get_model("annotation", "Study").objects.create(
        slug="mc", title="MC", kind="multiple_choice", selection={"task_set": "tasks"}
    )
    item = apps.get_model("annotation", "StudyItem").objects.create(
        study=study, example=second, target_annotations=3
    )
    user = apps.get_model("auth", "User").objects.create(username="curator", is_staff=True)
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    set_type, _ = ContentType.objects.get_or_create(app_label="mining", model="taskset")
    change, _ = Permission.objects.get_or_create(
        codename="change_taskset", content_type=set_type, defaults={"name": "Can change task set"}
    )
    user.user_permissions.add(change)
    return {
        "set": task_set.pk, "examples": sorted([first.pk, second.pk]), "model": model.pk,
        "answer": answer.pk, "item": item.pk, "second": second.pk, "user": user.pk, "procedure": procedure.pk,
    }  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_row_when_the_models_move_to_their_app(migrator: Any) -> None:
    old = migrator.apply_initial_migration(BEFORE)
    rows = _old_rows(old.apps)
    assert _tables() >= OLD_TABLES

    new = migrator.apply_tested_migration(AFTER)

    tables = _tables()
    assert tables >= NEW_TABLES and not OLD_TABLES & tables
    TaskSet = new.apps.get_model("goal_step", "TaskSet")
    task_set = TaskSet.objects.get(pk=rows["set"])
    assert (task_set.name, task_set.seed, task_set.funnel) == ("tasks", 3, {"a": 1})
    examples = new.apps.get_model("goal_step", "TaskExample").objects.filter(task_set=task_set)
    assert sorted(examples.values_list("pk", flat=True)) == rows["examples"]
    assert examples.get(task="step_inference").procedure_id == rows["procedure"]
    answer = new.apps.get_model("goal_step", "TaskAnswer").objects.get(pk=rows["answer"])
    assert answer.model_id == rows["model"] and answer.choice == 1
    item = new.apps.get_model("annotation", "StudyItem").objects.get(pk=rows["item"])
    assert item.example_id == rows["second"] and item.example.task == "step_ordering"
    # whoever could change task sets still can: the permission now belongs to goal_step.taskset
    Permission = new.apps.get_model("auth", "Permission")
    held = Permission.objects.filter(user__pk=rows["user"]).values_list("content_type__app_label", "codename")
    assert list(held) == [("goal_step", "change_taskset")]
    # new rows continue the same id sequences
    assert TaskSet.objects.create(name="next").pk > rows["set"]


@pytest.mark.django_db(transaction=True)
def test_it_moves_back(migrator: Any) -> None:
    """The move is reversible: back to the mining app, the tables keep their rows."""
    migrator.apply_initial_migration(AFTER)
    new = migrator.apply_tested_migration(AFTER)
    new.apps.get_model("goal_step", "TaskSet").objects.create(name="kept")
    old = migrator.apply_tested_migration(BEFORE)
    assert _tables() >= OLD_TABLES
    assert list(old.apps.get_model("mining", "TaskSet").objects.values_list("name", flat=True)) == ["kept"]
