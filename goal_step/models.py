"""Goal-step tasks (the wikiHow goal-step paper): task sets of multiple-choice examples built from procedures
or imported, the models that answer them and their answers. Moved from the mining app with their rows
(migrations goal_step 0001-0002, mining 0010, annotation 0012_goal_step_app)."""

from __future__ import annotations

from typing import Any

from django.db import models

from h2e_site.bounds import SEED
from h2e_site.jobs.configured_models import ConfiguredModel
from mining.models import Procedure, Topic


class GoalStepTask(models.TextChoices):
    """The three multiple-choice tasks of the wikiHow goal-step paper (§3)."""

    STEP_INFERENCE = "step_inference", "Step inference"
    GOAL_INFERENCE = "goal_inference", "Goal inference"
    STEP_ORDERING = "step_ordering", "Step ordering"


class TaskSplit(models.TextChoices):
    TEST = "test", "Test (to validate with crowd workers)"
    TRAIN = "train", "Train (built automatically; no prompt or candidate shared with test)"


class TaskSet(models.Model):
    """Multiple-choice examples of the three tasks, built from procedures (build.py) or imported
    (BIG-bench JSON), with the builder's funnel and the candidates-only artifact check of each task."""

    name = models.SlugField(max_length=64, unique=True)
    source = models.CharField(max_length=16, default="built", help_text="built here, or imported (bigbench)")
    seed = models.IntegerField(default=0, validators=SEED.validators())
    selection = models.JSONField(default=dict, blank=True, help_text="which procedures (splits, topics)")
    settings = models.JSONField(default=dict, blank=True, help_text="the builder's settings as used")
    funnel = models.JSONField(
        default=dict, blank=True, help_text="per task: candidates in, removed by each filter, kept"
    )
    artifacts = models.JSONField(
        default=dict, blank=True, help_text="per task: the candidates-only baseline, k of n with its interval"
    )
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class TaskExample(models.Model):
    """One multiple-choice example: a prompt (a goal, or a step), its candidates and the right one."""

    task_set = models.ForeignKey(TaskSet, on_delete=models.CASCADE, related_name="examples")
    task = models.CharField(max_length=16, choices=GoalStepTask.choices)
    split = models.CharField(max_length=8, choices=TaskSplit.choices, default=TaskSplit.TEST)
    position = models.PositiveIntegerField()
    prompt = models.TextField()
    candidates = models.JSONField(help_text="the candidate texts, in the order shown (A, B, ...)")
    answer = models.PositiveSmallIntegerField(help_text="index of the right candidate")
    procedure = models.ForeignKey(
        Procedure, on_delete=models.SET_NULL, null=True, blank=True, related_name="task_examples"
    )
    topic = models.ForeignKey(Topic, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["task_set_id", "task", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["task_set", "task", "position"], name="task_example_unique_position"
            )
        ]
        indexes = [models.Index(fields=["task_set", "split", "task"], name="task_example_set_split")]

    def __str__(self) -> str:
        return f"{self.task} #{self.position} of {self.task_set_id}"


class TaskModel(ConfiguredModel):
    """A model that answers goal-step examples: a generator config and its prompt, identified by model_id (a
    hash of them), or a set of imported answers."""

    id_field = "model_id"

    model_id = models.CharField(max_length=64, unique=True)
    is_demo_model = models.BooleanField(default=False)

    class Meta:
        ordering = ["model", "model_id"]

    def config_to_run(self) -> dict[str, Any]:
        """Its config without prompt_path: its prompts are always the files of prompts/goal_step/."""
        return {key: value for key, value in self.config.items() if key != "prompt_path"}


class TaskAnswer(models.Model):
    """A model's answer to one example: the candidate it chose (None: unparsable, counted as wrong and shown
    apart), from the full prompt or from the candidates alone (its own artifact check)."""

    model = models.ForeignKey(TaskModel, on_delete=models.CASCADE, related_name="answers", db_index=False)
    example = models.ForeignKey(TaskExample, on_delete=models.CASCADE, related_name="model_answers")
    candidates_only = models.BooleanField(default=False)
    choice = models.PositiveSmallIntegerField(null=True, blank=True)
    raw_output = models.TextField(blank=True, default="")
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_id", "example_id"]
        constraints = [
            models.UniqueConstraint(fields=["model", "example", "candidates_only"], name="task_answer_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model_id} on {self.example_id}: {self.choice}"

    @property
    def correct(self) -> bool:
        return self.choice is not None and self.choice == self.example.answer
