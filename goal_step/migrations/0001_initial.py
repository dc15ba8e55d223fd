"""The goal-step models move here from the mining app, keeping their tables and rows.

State only: the tables mining_taskset, mining_taskexample, mining_taskmodel and mining_taskanswer already exist
(mining 0006) and keep every row; annotation 0012_goal_step_app points StudyItem.example here, mining 0010
forgets the models, and goal_step 0002 renames the tables and moves their content types.
"""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("jobs", "0005_kind_without_choices"),
        ("mining", "0009_f_request_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="TaskModel",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("model_id", models.CharField(max_length=64, unique=True)),
                        ("model", models.CharField(max_length=255)),
                        ("backend", models.CharField(blank=True, default="", max_length=32)),
                        ("config", models.JSONField(blank=True, default=dict)),
                        ("prompt_text", models.TextField(blank=True, default="")),
                        ("prompt_sha256", models.CharField(blank=True, default="", max_length=64)),
                        ("is_demo_model", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={"ordering": ["model", "model_id"], "db_table": "mining_taskmodel"},
                ),
                migrations.CreateModel(
                    name="TaskSet",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.SlugField(max_length=64, unique=True)),
                        ("source", models.CharField(default="built", help_text="built here, or imported (bigbench)", max_length=16)),
                        ("seed", models.IntegerField(default=0, validators=[django.core.validators.MinValueValidator(0), django.core.validators.MaxValueValidator(2147483647)])),
                        ("selection", models.JSONField(blank=True, default=dict, help_text="which procedures (splits, topics)")),
                        ("settings", models.JSONField(blank=True, default=dict, help_text="the builder's settings as used")),
                        ("funnel", models.JSONField(blank=True, default=dict, help_text="per task: candidates in, removed by each filter, kept")),
                        ("artifacts", models.JSONField(blank=True, default=dict, help_text="per task: the candidates-only baseline, k of n with its interval")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("job", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="jobs.job")),
                    ],
                    options={"ordering": ["-created_at", "-id"], "db_table": "mining_taskset"},
                ),
                migrations.CreateModel(
                    name="TaskExample",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("task", models.CharField(choices=[("step_inference", "Step inference"), ("goal_inference", "Goal inference"), ("step_ordering", "Step ordering")], max_length=16)),
                        ("split", models.CharField(choices=[("test", "Test (to validate with crowd workers)"), ("train", "Train (built automatically; no prompt or candidate shared with test)")], default="test", max_length=8)),
                        ("position", models.PositiveIntegerField()),
                        ("prompt", models.TextField()),
                        ("candidates", models.JSONField(help_text="the candidate texts, in the order shown (A, B, ...)")),
                        ("answer", models.PositiveSmallIntegerField(help_text="index of the right candidate")),
                        ("meta", models.JSONField(blank=True, default=dict)),
                        ("procedure", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="task_examples", to="mining.procedure")),
                        ("topic", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="mining.topic")),
                        ("task_set", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="examples", to="goal_step.taskset")),
                    ],
                    options={
                        "ordering": ["task_set_id", "task", "position"],
                        "db_table": "mining_taskexample",
                        "indexes": [models.Index(fields=["task_set", "split", "task"], name="task_example_set_split")],
                        "constraints": [models.UniqueConstraint(fields=("task_set", "task", "position"), name="task_example_unique_position")],
                    },
                ),
                migrations.CreateModel(
                    name="TaskAnswer",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("candidates_only", models.BooleanField(default=False)),
                        ("choice", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("raw_output", models.TextField(blank=True, default="")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("job", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="jobs.job")),
                        ("example", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="model_answers", to="goal_step.taskexample")),
                        ("model", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="answers", to="goal_step.taskmodel")),
                    ],
                    options={
                        "ordering": ["model_id", "example_id"],
                        "db_table": "mining_taskanswer",
                        "constraints": [models.UniqueConstraint(fields=("model", "example", "candidates_only"), name="task_answer_unique")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
