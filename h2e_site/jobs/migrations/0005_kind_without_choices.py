"""Job.kind becomes a plain string: its kinds are the names the apps register (h2e_site/jobs/registry.py),
so a new kind needs no migration here. No data changes (the column only widens, 16 -> 64 characters)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0004_goal_step_tasks"),
    ]

    operations = [
        migrations.AlterField(model_name="job", name="kind", field=models.CharField(max_length=64)),
    ]
