"""The step-types kind's rows (the SIO paper): the candidate step pairs, the label sets and labels, and the
step-type classifiers with their predictions."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from annotation.base.models import Annotation
from h2e_site.jobs.configured_models import ConfiguredModel
from mining.models import Procedure


class StepTypeChoice(models.TextChoices):
    SEQUENTIAL = "sequential", "Sequential"
    INTERCHANGEABLE = "interchangeable", "Interchangeable"
    OPTIONAL = "optional", "Optional"


class StepCandidate(models.Model):
    """One decision of the step-types protocol on a procedure (annotation/kinds/step_types/candidates.py): an
    adjacent pair that may be SEQUENTIAL, a pair after an anchor that may be INTERCHANGEABLE, or a step after
    an anchor that may be OPTIONAL. 0-based step indices; `key` names it within its procedure."""

    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="step_candidates")
    step_type = models.CharField(max_length=16, choices=StepTypeChoice.choices)
    key = models.CharField(max_length=48)
    anchor = models.PositiveSmallIntegerField(null=True, blank=True)
    first = models.PositiveSmallIntegerField()
    second = models.PositiveSmallIntegerField(null=True, blank=True)
    position = models.PositiveSmallIntegerField(help_text="order within the procedure's candidates")

    class Meta:
        ordering = ["procedure_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["procedure", "key"], name="step_candidate_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} of procedure {self.procedure_id}"


class StepTypeLabelSet(models.Model):
    """Step-type labels imported from outside (e.g. a published dataset), to compare with a study's."""

    name = models.SlugField(max_length=64, unique=True)
    source_file = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class StepTypeLabel(models.Model):
    """Whether one candidate holds, as one human said: a study participant (through an annotation) or an
    annotator of an imported label set. Every candidate of an annotated item has a row (holds False when
    it was not marked), so "not marked" and "not asked" stay apart."""

    candidate = models.ForeignKey(StepCandidate, on_delete=models.CASCADE, related_name="labels")
    annotation = models.ForeignKey(
        Annotation, on_delete=models.CASCADE, related_name="step_labels", null=True, blank=True
    )
    label_set = models.ForeignKey(
        StepTypeLabelSet, on_delete=models.CASCADE, related_name="labels", null=True, blank=True
    )
    annotator = models.CharField(max_length=128, help_text="the participant's PID or the imported annotator")
    holds = models.BooleanField()
    expert = models.BooleanField(
        null=True, blank=True, help_text="expert or domain knowledge needed (asked only where it holds)"
    )

    class Meta:
        ordering = ["candidate_id", "annotator"]
        constraints = [
            models.CheckConstraint(
                condition=Q(annotation__isnull=False, label_set__isnull=True)
                | Q(annotation__isnull=True, label_set__isnull=False),
                name="step_label_one_source",
            ),
            models.UniqueConstraint(
                fields=["annotation", "candidate"],
                condition=Q(annotation__isnull=False),
                name="step_label_unique_per_annotation",
            ),
            models.UniqueConstraint(
                fields=["label_set", "annotator", "candidate"],
                condition=Q(label_set__isnull=False),
                name="step_label_unique_per_imported_annotator",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate.key}: {'holds' if self.holds else 'does not hold'} ({self.annotator})"


class StepTypeClassifier(ConfiguredModel):
    """An LLM that labels step-type candidates: model + config + prompts, identified by classifier_id (a hash
    of them, as a judge's judge_id), or a set of imported predictions (imported=True, no config)."""

    id_field = "classifier_id"

    classifier_id = models.CharField(max_length=64, unique=True)
    config = models.JSONField(default=dict, blank=True, help_text="the resolved model config it runs with")
    prompt_text = models.TextField(blank=True, default="", help_text="the prompt templates, as hashed")
    is_demo_model = models.BooleanField(default=False)
    imported = models.BooleanField(default=False)

    class Meta:
        ordering = ["model", "classifier_id"]

    def config_to_run(self) -> dict[str, Any]:
        """{} for imported predictions (no config to run them with), whatever the row keeps."""
        return {} if self.imported else self.config


class StepTypePrediction(models.Model):
    """A classifier's decision on one candidate: holds True / False, or None when its answer could not be
    parsed (kept, counted apart, and scored as wrong)."""

    classifier = models.ForeignKey(
        StepTypeClassifier, on_delete=models.CASCADE, related_name="predictions", db_index=False
    )
    candidate = models.ForeignKey(StepCandidate, on_delete=models.CASCADE, related_name="predictions")
    holds = models.BooleanField(null=True, blank=True)
    raw_output = models.TextField(blank=True, default="")
    job = models.ForeignKey(
        "jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="step_type_predictions"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["classifier_id", "candidate_id"]
        constraints = [
            models.UniqueConstraint(fields=["classifier", "candidate"], name="step_prediction_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.classifier_id} on {self.candidate_id}: {self.holds}"

    @property
    def parse_failed(self) -> bool:
        return self.holds is None
