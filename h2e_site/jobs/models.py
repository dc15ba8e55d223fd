"""The Job row: a long-running action run by a Celery worker, and the source of truth for its progress."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class JobKind(models.TextChoices):
    """Every kind of job. An app that adds a kind adds it here and registers it (registry.py)."""

    IMPORT = "import", "Import"
    GENERATE = "generate", "Generate L2"
    JUDGE = "judge", "Judge (How2Score)"
    MINE = "mine", "Mine procedures"
    CLASSIFY_STEPS = "classify_steps", "Classify step types"
    BUILD_TASKS = "build_tasks", "Build goal-step tasks"
    ANSWER_TASKS = "answer_tasks", "Answer goal-step tasks"
    EXPORT = "export", "Export"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
JOB_MODE_LABELS = {
    "missing": "what is not judged yet",
    "parse_failed": "re-judge parse failures",
    "replace": "re-judge all, replacing",
}


class JobQuerySet(models.QuerySet["Job"]):
    def active(self) -> JobQuerySet:
        """Queued or running."""
        return self.filter(status__in=ACTIVE_STATUSES)


class Job(models.Model):
    """A long-running action run by a Celery worker; the source of truth for its progress."""

    kind = models.CharField(max_length=16, choices=JobKind.choices)
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
        return f"{self.get_kind_display()} job #{self.pk} ({self.status})"

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
    def mode_label(self) -> str:
        """A judge job's mode in words (one spelling everywhere)."""
        mode = str(self.parameters.get("mode") or "")
        return JOB_MODE_LABELS.get(mode, mode.replace("_", " "))

    @property
    def progress_percent(self) -> float:
        return 100.0 * (self.done + self.failed) / self.total if self.total else 0.0
