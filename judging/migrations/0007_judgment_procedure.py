"""Judgment.procedure, denormalised from the generation like generator and topic (#12): the paired tests
between generators pair their judgments by example, and the leaderboard index carries it so the leaderboard
and its paired tests read one index."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill_procedure(apps, schema_editor):
    Judgment = apps.get_model("judging", "Judgment")
    Generation = apps.get_model("judging", "Generation")
    Judgment.objects.update(
        procedure_id=Subquery(Generation.objects.filter(pk=OuterRef("generation_id")).values("procedure_id"))
    )


class Migration(migrations.Migration):
    # PostgreSQL refuses to ALTER a table with deferred constraint checks pending from rows written in the
    # same transaction: the schema steps commit one by one, the data step is one transaction of its own.
    atomic = False

    dependencies = [
        ("judging", "0006_judge_error"),
        ("mining", "0005_run_job_in_core"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgment",
            name="procedure",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judgments",
                to="mining.procedure",
            ),
        ),
        migrations.RunPython(fill_procedure, migrations.RunPython.noop, atomic=True),
        migrations.AlterField(
            model_name="judgment",
            name="procedure",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judgments",
                to="mining.procedure",
            ),
        ),
        migrations.RemoveIndex(model_name="judgment", name="judgment_leaderboard"),
        migrations.AddIndex(
            model_name="judgment",
            index=models.Index(
                fields=["generator", "judge"],
                include=["parse_failed", "has_failure", "n_failures", "topic", "procedure"],
                name="judgment_leaderboard",
            ),
        ),
    ]
