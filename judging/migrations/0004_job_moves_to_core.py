"""Job now lives in h2e_site.jobs (jobs 0001): removed from this app's state only; no table is touched."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0003_failure_browser_indexes"),
        ("jobs", "0001_initial"),
        ("mining", "0005_run_job_in_core"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Job")],
            database_operations=[],
        ),
    ]
