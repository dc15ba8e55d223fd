"""An API or connection error is not a judgment (#12): it becomes a JudgeError, a failed item of its judge job.

Judgments stored with `error` set (a parse failure standing in for an outage) move to JudgeError, keeping their
error text, attempts and dates, and are deleted as judgments, so they leave the parse-failure count and the
strict score. The job they came from was not recorded on them, so their `job` is empty: a judge job in mode
parse_failed (or the admin's re-judge action) judges them again. Going back recreates them as parse failures.
"""

import django.db.models.deletion
from django.db import migrations, models


def errors_to_judge_errors(apps, schema_editor):
    Judgment = apps.get_model("judging", "Judgment")
    JudgeError = apps.get_model("judging", "JudgeError")
    errored = Judgment.objects.exclude(error="")
    JudgeError.objects.bulk_create(
        [
            JudgeError(
                judge_id=row.judge_id,
                generation_id=row.generation_id,
                error=row.error,
                attempts=row.attempts,
                created_at=row.created_at,
                updated_at=row.updated_at,
            )
            for row in errored.iterator()
        ],
        batch_size=1000,
    )
    errored.delete()


def judge_errors_to_errors(apps, schema_editor):
    Judgment = apps.get_model("judging", "Judgment")
    JudgeError = apps.get_model("judging", "JudgeError")
    for failed in JudgeError.objects.select_related("generation__procedure").iterator():
        Judgment.objects.get_or_create(
            judge_id=failed.judge_id,
            generation_id=failed.generation_id,
            defaults={
                "generator_id": failed.generation.generator_id,
                "topic_id": failed.generation.procedure.topic_id,
                "parse_failed": True,
                "has_failure": True,
                "error": failed.error,
                "attempts": failed.attempts,
            },
        )


class Migration(migrations.Migration):
    # PostgreSQL refuses to ALTER a table with deferred constraint checks pending from rows written in the
    # same transaction: the schema steps commit one by one, the data step is one transaction of its own.
    atomic = False

    dependencies = [
        ("jobs", "0002_own_table"),
        ("judging", "0005_prompt_text"),
    ]

    operations = [
        migrations.CreateModel(
            name="JudgeError",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("error", models.TextField()),
                ("attempts", models.IntegerField(default=0)),
                # Plain until the errors have moved (auto_now would overwrite the dates they keep).
                ("created_at", models.DateTimeField()),
                ("updated_at", models.DateTimeField()),
                (
                    "generation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="judge_errors",
                        to="judging.generation",
                    ),
                ),
                (
                    "job",
                    models.ForeignKey(
                        blank=True,
                        help_text="the judge job whose item this was (empty for errors stored before jobs "
                        "recorded them)",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="judge_errors",
                        to="jobs.job",
                    ),
                ),
                (
                    "judge",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="errors",
                        to="judging.judge",
                    ),
                ),
            ],
            options={
                "ordering": ["judge_id", "generation_id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("judge", "generation"), name="judge_error_unique_per_generation"
                    )
                ],
            },
        ),
        migrations.RunPython(errors_to_judge_errors, judge_errors_to_errors, atomic=True),
        migrations.AlterField(
            model_name="judgeerror", name="created_at", field=models.DateTimeField(auto_now_add=True)
        ),
        migrations.AlterField(
            model_name="judgeerror", name="updated_at", field=models.DateTimeField(auto_now=True)
        ),
        migrations.RemoveField(model_name="judgment", name="error"),
    ]
