"""The engine's item subject and presentation (issue #21): StudyItem.subject_key names what an item annotates
in its kind's words, with one uniqueness for every kind (one regular item per subject in a study) in place of
one partial constraint per kind's foreign key; Assignment.presentation stores how the kind showed the item to
the participant; Study.kind's choices are the kind registry's (a callable: no migration per kind)."""

import annotation.base.types
from django.db import migrations, models

# The existing items' subjects, as the kinds now write them (annotation.base.types.subject_key).
FILL_SUBJECTS = """
UPDATE annotation_studyitem SET subject_key = CASE
    WHEN generation_id IS NOT NULL THEN 'generation:' || generation_id
    WHEN procedure_id IS NOT NULL THEN 'procedure:' || procedure_id
    ELSE 'example:' || example_id
END
"""


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_reading_steps"),
    ]

    operations = [
        migrations.AddField(
            model_name="studyitem",
            name="subject_key",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunSQL(FILL_SUBJECTS, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="studyitem",
            name="subject_key",
            field=models.CharField(
                help_text="what the item annotates, in its kind's words (e.g. generation:12, pair:3:8): a "
                "study has one regular item per subject",
                max_length=64,
            ),
        ),
        migrations.RemoveConstraint(model_name="studyitem", name="study_item_unique_generation"),
        migrations.RemoveConstraint(model_name="studyitem", name="study_item_unique_procedure"),
        migrations.RemoveConstraint(model_name="studyitem", name="study_item_unique_example"),
        migrations.RemoveConstraint(model_name="studyitem", name="study_item_has_a_subject"),
        migrations.AddConstraint(
            model_name="studyitem",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_attention_check", False)),
                fields=("study", "subject_key"),
                name="study_item_unique_subject",
            ),
        ),
        migrations.AddConstraint(
            model_name="studyitem",
            constraint=models.CheckConstraint(
                condition=models.Q(("subject_key", ""), _negated=True), name="study_item_has_a_subject"
            ),
        ),
        migrations.AddField(
            model_name="assignment",
            name="presentation",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="how the kind showed the item to this participant, drawn when issued (e.g. which "
                "L2 was on the left)",
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="kind",
            field=models.CharField(
                choices=annotation.base.types.kind_choices,
                db_default="critical_failures",
                default="critical_failures",
                max_length=32,
            ),
        ),
    ]
