"""Migrations of #12, run for real on a database holding the rows they change: API errors stored as judgments
become JudgeErrors (and leave the scores), and judgments learn their procedure. Plus: no model change lacks
its migration."""

from __future__ import annotations

import datetime as dt
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

BEFORE = [("judging", "0005_prompt_text")]
AFTER = [("judging", "0007_judgment_procedure")]


def _world(apps: Any) -> dict[str, Any]:
    Topic = apps.get_model("mining", "Topic")
    Procedure = apps.get_model("mining", "Procedure")
    Generator = apps.get_model("judging", "Generator")
    Generation = apps.get_model("judging", "Generation")
    Judge = apps.get_model("judging", "Judge")
    Judgment = apps.get_model("judging", "Judgment")
    topic = Topic.objects.create(name="Migration topic")
    generator = Generator.objects.create(generator_id="g", model="m")
    judge = Judge.objects.create(judge_id="j", model="m")
    generations = [
        Generation.objects.create(
            generator=generator,
            procedure=Procedure.objects.create(
                source_example_id=f"ex{i}", goal="Goal", steps=["a", "b"], topic=topic
            ),
            predicted_steps=["a", "b"],
        )
        for i in range(3)
    ]
    good, parse_failed, errored = (
        Judgment.objects.create(
            judge=judge, generation=g, generator=generator, topic=topic, parse_failed=pf, has_failure=pf
        )
        for g, pf in zip(generations, [False, True, True], strict=True)
    )
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    Judgment.objects.filter(pk=errored.pk).update(
        error="HTTP 503 after 6 attempts", attempts=6, created_at=when, updated_at=when
    )
    return {"generations": generations, "good": good.pk, "parse_failed": parse_failed.pk, "when": when}


@pytest.mark.django_db(transaction=True)
def test_api_errors_become_judge_errors_and_judgments_get_their_procedure(migrator: Any) -> None:
    old = migrator.apply_initial_migration(BEFORE)
    world = _world(old.apps)

    new = migrator.apply_tested_migration(AFTER)

    Judgment = new.apps.get_model("judging", "Judgment")
    JudgeError = new.apps.get_model("judging", "JudgeError")
    generations = world["generations"]
    assert set(Judgment.objects.values_list("pk", flat=True)) == {world["good"], world["parse_failed"]}
    error = JudgeError.objects.get()
    assert (error.generation_id, error.error, error.attempts, error.job_id) == (
        generations[2].pk,
        "HTTP 503 after 6 attempts",
        6,
        None,
    )
    assert error.created_at == world["when"] and error.updated_at == world["when"]
    procedures = dict(Judgment.objects.values_list("generation_id", "procedure_id"))
    assert procedures == {g.pk: g.procedure_id for g in generations[:2]}


@pytest.mark.django_db(transaction=True)
def test_going_back_makes_the_errors_parse_failures_again(migrator: Any) -> None:
    old = migrator.apply_initial_migration(BEFORE)
    world = _world(old.apps)
    migrator.apply_tested_migration(AFTER)

    back = migrator.apply_tested_migration(BEFORE)

    Judgment = back.apps.get_model("judging", "Judgment")
    errored = Judgment.objects.get(generation_id=world["generations"][2].pk)
    assert (errored.parse_failed, errored.error, errored.attempts) == (True, "HTTP 503 after 6 attempts", 6)


@pytest.mark.django_db
def test_every_model_change_has_its_migration() -> None:
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 (SystemExit) on a gap
    assert "No changes detected" in out.getvalue()
