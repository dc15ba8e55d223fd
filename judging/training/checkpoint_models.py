"""A training run's checkpoints on the benchmark (paper Table 2): each checkpoint is a Generator (a config
serving that checkpoint, its step), and the out-of-domain scores imported for it.

Registered with the app's models by judging/models.py, as judging/training/models.py is.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from h2e_site.bounds import INT32_MAX

from .models import TrainingRun

LABEL_MAX = 100
BENCHMARK_MAX = 100


class Checkpoint(models.Model):
    """A checkpoint of a run at a step, answering the benchmark as a Generator. The first checkpoint (the
    lowest step, usually 0: the original model) is what the others are compared against."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.IntegerField(help_text="the training step (0: the model before training)")
    label = models.CharField(max_length=LABEL_MAX, blank=True, default="", help_text="e.g. base, +RL")
    generator = models.ForeignKey("judging.Generator", on_delete=models.PROTECT, related_name="checkpoints")
    config_path = models.TextField(blank=True, default="", help_text="the generator config it came from")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "step"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step"], name="checkpoint_unique_step"),
            models.UniqueConstraint(fields=["run", "generator"], name="checkpoint_unique_generator"),
            models.UniqueConstraint(
                fields=["run", "label"], condition=~models.Q(label=""), name="checkpoint_unique_label"
            ),
            models.CheckConstraint(
                condition=models.Q(step__gte=0, step__lte=INT32_MAX), name="checkpoint_step_in_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}@{self.step}"

    @property
    def name(self) -> str:
        """How the table names it: its label with its step, or the step alone."""
        return f"{self.label} (step {self.step:,})" if self.label else f"step {self.step:,}"


class OODResult(models.Model):
    """A checkpoint's score on an out-of-domain benchmark (MMLU-Pro, GSM8K, ...), imported from a file."""

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.CASCADE, related_name="ood_results")
    benchmark = models.CharField(max_length=BENCHMARK_MAX)
    score = models.FloatField()
    higher_is_better = models.BooleanField(
        null=True,
        blank=True,
        help_text="empty: higher is better (the Δ_OOD mean takes lower-is-better Δ negated)",
    )
    source = models.CharField(max_length=255, blank=True, default="", help_text="the file it came from")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["checkpoint_id", "benchmark"]
        constraints = [
            models.UniqueConstraint(fields=["checkpoint", "benchmark"], name="ood_result_unique_benchmark")
        ]

    def __str__(self) -> str:
        return f"{self.checkpoint} {self.benchmark}: {self.score}"
