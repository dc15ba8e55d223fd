"""The Job model moves here from the judging app, keeping its table and rows.

State only: the table judging_job already exists (judging 0001) and keeps every row; jobs 0002 renames it.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("judging", "0003_failure_browser_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("kind", models.CharField(choices=[("import", "Import"), ("generate", "Generate L2"), ("judge", "Judge (How2Score)"), ("mine", "Mine procedures"), ("export", "Export")], max_length=16)),
                        ("parameters", models.JSONField(blank=True, default=dict)),
                        ("status", models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed"), ("cancelled", "Cancelled")], default="queued", max_length=16)),
                        ("total", models.IntegerField(default=0)),
                        ("done", models.IntegerField(default=0)),
                        ("failed", models.IntegerField(default=0)),
                        ("error", models.TextField(blank=True, default="")),
                        ("celery_task_id", models.CharField(blank=True, default="", max_length=255)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("created_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "ordering": ["-created_at", "-id"],
                        "db_table": "judging_job",
                        "indexes": [models.Index(fields=["status", "kind"], name="job_status_kind")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
