"""Adjudicated gold as events (annotation/gold.py): one row per decision, only ever added."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.studies import StudyItem


class GoldEvent(models.Model):
    """One adjudication decision on an item: its gold answer set (`verdict`; None clears it), who decided,
    when, why, and what the gold was before. Events are only ever added: the gold set as of any time is
    rebuilt from them (annotation/gold.py), and undoing a decision is a new event restoring `before`."""

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
