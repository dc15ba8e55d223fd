"""StudyItem.example points at goal_step.TaskExample, the model that moved from the mining app with its table
(goal_step 0001). State only: the column and its foreign key stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0011_pairwise_items"),
        ("goal_step", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="studyitem",
                    name="example",
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="study_items", to="goal_step.taskexample"),
                ),
            ],
            database_operations=[],
        ),
    ]
