"""The critical-failures kind's own tables: a calibration study's rounds and the frame examples each drew,
with
their inclusion probabilities (calibration/sample.py draws them), and adjudicated gold as events
(gold_events.py):
one row per decision, only ever added."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.base.models import Study, StudyItem
from h2e_site.bounds import SEED, Range
from judging.models import Generation


class CalibrationDesign(models.TextChoices):
    """How a calibration round draws its examples (h2e_site/stats/sampling.py has the definitions)."""

    UNIFORM = "uniform", "uniform: a simple random sample"
    STRATIFIED = "stratified", "stratified by topic: the same number from every topic"
    DISAGREEMENT = "disagreement", "over-sample where judges disagree or flip"


class CalibrationRound(models.Model):
    """One round of a calibration sample: a draw from the study's frame (the generations its selection
    matched when the study was built) with every frame example's inclusion probability stored
    (CalibrationDraw), so the calibrated How2Score can weight each labelled item by 1 / pi. Round 1 is drawn
    when the study is built; later rounds route the next labels to where the judges are least sure."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="calibration_rounds")
    number = models.PositiveSmallIntegerField(validators=Range(1, 1000).validators())
    design = models.CharField(max_length=16, choices=CalibrationDesign.choices)
    size = models.PositiveIntegerField(help_text="examples drawn (some may already have been drawn before)")
    new_items = models.PositiveIntegerField(default=0, help_text="items this round added to the study")
    seed = models.BigIntegerField(default=0, validators=SEED.validators())
    judge_ids = models.JSONField(
        default=list, blank=True, help_text="judges whose verdicts gave the uncertainty (disagreement design)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="calibration_round_unique_number"),
        ]

    def __str__(self) -> str:
        return f"round {self.number} of {self.study_id} ({self.design}, {self.size})"


class CalibrationDraw(models.Model):
    """A frame example's inclusion probability in one round, and whether the round drew it."""

    round = models.ForeignKey(
        CalibrationRound, on_delete=models.CASCADE, related_name="draws", db_index=False
    )
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="calibration_draws")
    probability = models.FloatField(validators=Range(0.0, 1.0).validators())
    drawn = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["round", "generation"], name="calibration_draw_unique"),
            models.CheckConstraint(
                condition=Q(probability__gte=0) & Q(probability__lte=1), name="calibration_draw_probability"
            ),
            models.CheckConstraint(
                condition=Q(drawn=False) | Q(probability__gt=0), name="calibration_draw_drawn_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"generation {self.generation_id} in {self.round_id}: {self.probability:.4g}"


class GoldEvent(models.Model):
    """One adjudication decision on an item: its gold answer set (`verdict`; None clears it), who decided,
    when, why, and what the gold was before. Events are only ever added: the gold set as of any time is
    rebuilt from them (annotation/kinds/critical_failures/gold_events.py), and undoing a decision is a new
    event restoring `before`."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="gold_events")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(db_index=True)
    verdict = models.JSONField(
        null=True, blank=True, help_text="the gold answer, as the item's kind records one"
    )
    before = models.JSONField(null=True, blank=True, help_text="the gold answer this decision replaced")
    reason = models.TextField()

    class Meta:
        ordering = ["decided_at", "id"]
        constraints = [models.CheckConstraint(condition=~Q(reason=""), name="gold_event_has_reason")]

    def __str__(self) -> str:
        return f"gold of item {self.item_id} at {self.decided_at:%Y-%m-%d %H:%M}"
