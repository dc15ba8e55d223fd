"""Generators and judges keep the text of their prompt (what their jobs send, as hashed into their id).

Rows made from a config before this get the text of their prompt file when it still hashes to the recorded
prompt_sha256; otherwise the text stays empty and their jobs refuse to run with a message naming the file
(judging.configs.prompt_for_generator / prompt_for_judge), rather than send a prompt their id does not describe.
"""

import hashlib
from pathlib import Path

from django.conf import settings
from django.db import migrations, models


def _file_text(row):
    path = Path(row.prompt_path)
    path = path if path.is_absolute() else Path(settings.BASE_DIR) / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    return text if hashlib.sha256(text.encode("utf-8")).hexdigest() == row.prompt_sha256 else ""


def backfill_prompt_text(apps, schema_editor):
    for name in ("Generator", "Judge"):
        model = apps.get_model("judging", name)
        for row in model.objects.exclude(config={}).exclude(prompt_path="").filter(prompt_text=""):
            text = _file_text(row)
            if text:
                model.objects.filter(pk=row.pk).update(prompt_text=text)


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0004_job_moves_to_core"),
    ]

    operations = [
        migrations.AddField(
            model_name="generator",
            name="prompt_text",
            field=models.TextField(blank=True, default="", help_text="the prompt its jobs send, as hashed into generator_id (empty if imported)"),
        ),
        migrations.AddField(
            model_name="judge",
            name="prompt_text",
            field=models.TextField(blank=True, default="", help_text="the prompt its jobs send, as hashed into judge_id (empty if imported)"),
        ),
        migrations.RunPython(backfill_prompt_text, migrations.RunPython.noop),
    ]
