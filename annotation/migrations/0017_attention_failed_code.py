"""The failed-attention-check completion code (issue #23): every existing study gets a code of its own."""

import secrets

import django.core.validators
from django.db import migrations, models


def codes_fill(apps, schema_editor):  # type: ignore[no-untyped-def]
    Study = apps.get_model("annotation", "Study")
    for study in Study.objects.filter(attention_failed_code=""):
        study.attention_failed_code = secrets.token_hex(4).upper()
        study.save(update_fields=["attention_failed_code"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0016_gold_events")]

    operations = [
        migrations.AddField(
            model_name="study",
            name="attention_failed_code",
            field=models.CharField(
                default="",
                help_text="the code of a participant who failed attention_fail_limit attention checks",
                max_length=64,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="study",
            name="attention_fail_limit",
            field=models.PositiveSmallIntegerField(
                default=2,
                help_text="failed attention checks that earn the failed-attention-check code (Prolific: one can "
                "be a ground to reject in a study under 5 minutes, more than one at 5 minutes or more)",
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(1000),
                ],
            ),
        ),
        migrations.RunPython(codes_fill, migrations.RunPython.noop),
    ]
