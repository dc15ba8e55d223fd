"""The Job admin: every job read-only, with its progress; cancel and retry (the jobs.add_job permission)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from h2e_site.bounds import BoundedJSONAdmin
from h2e_site.web import RunActionsMixin, confirmed, pre_block, request_user

from . import services
from .models import Job
from .registry import job_kind_choices, start_links


def jobs_redirect(request: HttpRequest, jobs: list[Job], *, what: str) -> HttpResponse | None:
    """After an admin action started jobs: say so, then show the job (one) or the Jobs page (several)."""
    if not jobs:
        return None
    items = sum(job.total for job in jobs)
    names = ", ".join(f"#{job.pk}" for job in jobs)
    messages.success(request, f"Started {what} job{'s' if len(jobs) > 1 else ''} {names} ({items} item(s)).")
    if len(jobs) == 1:
        return redirect("jobs:job_detail", pk=jobs[0].pk)
    return redirect("jobs:job_list")


class KindFilter(admin.SimpleListFilter):
    """By kind: the kinds the apps register, by their labels (Job.kind has no choices)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return job_kind_choices()

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.register(Job)
class JobAdmin(BoundedJSONAdmin, RunActionsMixin, admin.ModelAdmin):
    actions = ["cancel_jobs", "retry_failed_items"]
    list_display = ["id", "kind_label", "status", "progress", "created_by", "created_at", "finished_at"]
    list_filter = ["status", KindFilter]
    list_select_related = ["created_by"]
    search_fields = ["=celery_task_id"]
    readonly_fields = [
        "kind_label",
        "status",
        "progress",
        "parameters",
        "total",
        "done",
        "failed",
        "error_block",
        "celery_task_id",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
        "page_link",
    ]
    exclude = ["error"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """The list, with a button for each page that starts a kind of job (e.g. "Import h2e files")."""
        return super().changelist_view(request, {**(extra_context or {}), "start_links": start_links()})

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="kind", ordering="kind")
    def kind_label(self, obj: Job) -> str:
        return obj.kind_label

    @admin.display(description="progress")
    def progress(self, obj: Job) -> SafeString:
        return format_html(
            '<progress max="100" value="{}"></progress> {} / {}{}',
            f"{obj.progress_percent:.0f}",
            obj.done,
            obj.total or "?",
            format_html(" ({} failed)", obj.failed) if obj.failed else "",
        )

    @admin.display(description="error")
    def error_block(self, obj: Job) -> SafeString:
        return pre_block(obj.error)

    @admin.action(description="Cancel job…", permissions=["run"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
        running = [job for job in queryset if not job.is_finished]
        if running and not confirmed(request):
            return self.action_page(
                request,
                queryset,
                action="cancel_jobs",
                title="Cancel jobs",
                submit_label=f"Yes, cancel {len(running)} job{'s' if len(running) > 1 else ''}",
                summary=[
                    f"#{job.pk} {job.kind_label}, {job.get_status_display().lower()}: "
                    f"{job.done + job.failed} of {job.total or '?'} items done" for job in running
                ] + [f"#{job.pk} is {job.get_status_display().lower()}: left as it is" for job in queryset
                     if job.is_finished],
                warning="A running job stops starting requests within a second; what it stored stays. "
                "Its failed or missing items can be run later (retry them, or start the work again).",
            )  # fmt: skip
        cancelled = [services.job_cancel(job=job) for job in running]
        if not cancelled:
            messages.warning(request, "None of the selected jobs was queued or running.")
            return None
        names = ", ".join(f"#{job.pk}" for job in cancelled)
        messages.success(request, f"Cancelled job{'s' if len(cancelled) > 1 else ''} {names}.")
        if len(cancelled) == 1:
            return redirect("jobs:job_detail", pk=cancelled[0].pk)
        return redirect("jobs:job_list")

    @admin.action(description="Retry failed items", permissions=["run"])
    def retry_failed_items(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
        """A new job per selected job of a retryable kind over its failed items."""
        with_failures = [job for job in queryset if services.job_can_retry(job)]
        if not with_failures:
            messages.warning(request, "None of the selected jobs of a retryable kind has failed items.")
            return None
        user = request_user(request)
        retries = []
        for job in with_failures:
            try:
                retries.append(services.job_retry_failed(job=job, created_by=user))
            except ValueError as exc:  # ConfigError: a row that cannot be run from the app
                messages.error(request, f"{job}: {exc}")
        return jobs_redirect(request, retries, what="retry")

    @admin.display(description="page")
    def page_link(self, obj: Job) -> SafeString:
        return format_html('<a href="{}">Follow this job live</a>', reverse("jobs:job_detail", args=[obj.pk]))
