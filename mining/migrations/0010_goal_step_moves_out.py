"""The goal-step models leave the mining app for their own (goal_step 0001 took them over, annotation
0012_goal_step_app repointed StudyItem.example). State only: the tables and rows stay; goal_step 0002 renames
them."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("mining", "0009_f_request_index"),
        ("goal_step", "0001_initial"),
        ("annotation", "0012_goal_step_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="TaskAnswer"),
                migrations.DeleteModel(name="TaskModel"),
                migrations.DeleteModel(name="TaskExample"),
                migrations.DeleteModel(name="TaskSet"),
            ],
            database_operations=[],
        ),
    ]
