"""The moved Job table takes this app's name (judging_job -> jobs_job: a rename, every row kept), and the
content type and permissions of judging.job become jobs.job, so whoever could run jobs still can."""

from django.db import migrations


def content_type_to_jobs(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    old = ContentType.objects.filter(app_label="judging", model="job")
    if not old.exists():
        return  # a new database: post_migrate creates jobs.job
    ContentType.objects.filter(app_label="jobs", model="job").delete()
    old.update(app_label="jobs")


def content_type_to_judging(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="judging", model="job").delete()
    ContentType.objects.filter(app_label="jobs", model="job").update(app_label="judging")


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_initial"),
        ("judging", "0004_job_moves_to_core"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelTable(name="job", table=None),
        migrations.RunPython(content_type_to_jobs, content_type_to_judging),
    ]
