"""What Prolific tells the studio about its participants: webhook events (stored once), each participant's
submission statuses, and bonuses (one row per participant and reason, so a bonus is never paid twice)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotation.base.models import Participant, Study


class ProlificEvent(models.Model):
    """A webhook event Prolific delivered, stored once: its X-Event-ID is unique, so a redelivery (Prolific
    delivers at least once) changes nothing."""

    event_id = models.CharField(max_length=128, unique=True)
    event_type = models.CharField(max_length=64)
    resource_id = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=32, blank=True, default="")
    payload = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)
    # When Prolific sent it (X-Timestamp): events arrive in any order, and one sent before another already
    # applied to its submission is not applied over it (annotation/prolific/hooks.py).
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["received_at", "id"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} {self.status}".strip()


class ParticipantStatus(models.Model):
    """A Prolific submission status a participant reached (RETURNED, TIMED-OUT, APPROVED, ...), in order."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="prolific_statuses")
    status = models.CharField(max_length=32)
    at = models.DateTimeField(auto_now_add=True)
    event = models.ForeignKey(ProlificEvent, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["participant_id", "at", "id"]

    def __str__(self) -> str:
        return f"{self.participant_id}: {self.status}"


class BonusState(models.TextChoices):
    NEW = "new", "To pay"
    CLAIMED = "claimed", "Being set up on Prolific"
    PAY_SENT = "pay_sent", "Pay sent to Prolific"
    PAID = "paid", "Paid"
    UNKNOWN = "unknown", "Unknown: the pay call did not answer (check on Prolific; never sent again)"


class ProlificBonus(models.Model):
    """A bonus for a participant, at most one per (participant, reason): the row that makes paying twice
    impossible from the studio's side (annotation/prolific/bonuses.py says how)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="prolific_bonuses")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="prolific_bonuses")
    reason = models.CharField(max_length=80)
    amount = models.DecimalField(max_digits=8, decimal_places=2, help_text="in the study's currency")
    state = models.CharField(max_length=16, choices=BonusState.choices, default=BonusState.NEW)
    batch_id = models.CharField(max_length=64, blank=True, default="")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "reason"], name="bonus_once_per_reason"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_positive"),
        ]

    def __str__(self) -> str:
        return f"bonus {self.amount} to {self.participant_id} ({self.reason}, {self.state})"
