"""The Job row: a long-running action run by a Celery worker, and the source of truth for its progress."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .registry import KIND_MAX_LENGTH, job_kind_label, job_note


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class JobQuerySet(models.QuerySet["Job"]):
    def active(self) -> JobQuerySet:
        """Queued or running."""
        return self.filter(status__in=ACTIVE_STATUSES)


class Job(models.Model):
    """A long-running action run by a Celery worker; the source of truth for its progress."""

    # The name of a kind an app registers (registry.py); no choices, so a new kind needs no migration here.
    kind = models.CharField(max_length=KIND_MAX_LENGTH)
    parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    total = models.IntegerField(default=0)
    done = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    error = models.TextField(blank=True, default="")
    celery_task_id = models.CharField(max_length=255, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "kind"], name="job_status_kind")]

    def __str__(self) -> str:
        return f"{self.kind_label} job #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}

    @property
    def outcome(self) -> str:
        """The status as the pages show it: a success with failed items says so."""
        if self.status == JobStatus.SUCCEEDED and self.failed:
            return f"Succeeded, {self.failed} failed"
        return self.get_status_display()

    @property
    def outcome_class(self) -> str:
        return "partial" if self.status == JobStatus.SUCCEEDED and self.failed else str(self.status)

    @property
    def kind_label(self) -> str:
        """The kind as its app labels it (its name if no app registers it now)."""
        return job_kind_label(self.kind)

    @property
    def note(self) -> str:
        """A few words its kind shows beside the label ("" when none)."""
        return job_note(self)

    @property
    def progress_percent(self) -> float:
        return 100.0 * (self.done + self.failed) / self.total if self.total else 0.0
