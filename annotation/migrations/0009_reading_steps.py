"""Assignment.n_l2_steps becomes n_reading_steps: the texts the reading gate reveals, whatever the kind."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_calibration_rounds"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="assignment",
            name="assignment_revealed_le_steps",
        ),
        migrations.RenameField(
            model_name="assignment",
            old_name="n_l2_steps",
            new_name="n_reading_steps",
        ),
        migrations.AlterField(
            model_name="assignment",
            name="n_reading_steps",
            field=models.PositiveIntegerField(
                help_text=(
                    "texts the reading gate reveals, counted when issued (the kind's "
                    "reading_steps): all must be revealed"
                )
            ),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.CheckConstraint(
                condition=models.Q(("n_revealed__lte", models.F("n_reading_steps"))),
                name="assignment_revealed_le_steps",
            ),
        ),
    ]
