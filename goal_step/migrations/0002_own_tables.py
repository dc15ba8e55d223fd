"""The moved tables take this app's name (mining_task* -> goal_step_task*: renames, every row kept; the
foreign keys that point at them follow), and the content types and permissions of mining.taskset, ...
become goal_step.taskset, ..., so whoever held mining.change_taskset now holds goal_step.change_taskset."""

from django.db import migrations

MODELS = ("taskset", "taskexample", "taskmodel", "taskanswer")


def content_types_to_goal_step(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        old = ContentType.objects.filter(app_label="mining", model=model)
        if not old.exists():
            continue  # a new database: post_migrate creates goal_step's
        ContentType.objects.filter(app_label="goal_step", model=model).delete()
        old.update(app_label="goal_step")


def content_types_to_mining(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        ContentType.objects.filter(app_label="mining", model=model).delete()
        ContentType.objects.filter(app_label="goal_step", model=model).update(app_label="mining")


class Migration(migrations.Migration):

    dependencies = [
        ("goal_step", "0001_initial"),
        ("mining", "0010_goal_step_moves_out"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelTable(name="taskset", table=None),
        migrations.AlterModelTable(name="taskexample", table=None),
        migrations.AlterModelTable(name="taskmodel", table=None),
        migrations.AlterModelTable(name="taskanswer", table=None),
        migrations.RunPython(content_types_to_goal_step, content_types_to_mining),
    ]
