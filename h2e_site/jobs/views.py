"""The Jobs pages (staff): every job with its live progress; cancel and retry need jobs.add_job (POST,
CSRF). Running jobs poll their row (list) or panel (job page) every 2 s until they finish."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import trigger_client_event

from h2e_site.web import (
    HtmxHttpRequest,
    can_run_jobs,
    format_duration,
    request_user,
    staff_required,
    wants_fragment,
)

from . import services
from .models import ACTIVE_STATUSES, Job
from .registry import JobDescription, JobLink, job_type_for, job_types, start_links


@dataclass(frozen=True)
class JobLine:
    """A job as the jobs pages show it: the row, what it runs on (its kind describes it), its clock."""

    job: Job
    description: JobDescription = field(default_factory=JobDescription)
    elapsed_seconds: float | None = None
    eta_seconds: float | None = None

    @property
    def elapsed(self) -> str:
        return format_duration(self.elapsed_seconds)

    @property
    def eta(self) -> str:
        return format_duration(self.eta_seconds)

    @property
    def parameters_shown(self) -> dict[str, Any]:
        """The parameters without the item list (thousands of ids) and the item errors (shown apart)."""
        shown = {k: v for k, v in self.job.parameters.items() if k not in {"items", "errors"}}
        if "items" in self.job.parameters:
            shown["items"] = f"{len(self.job.parameters['items'])} ids"
        return shown

    @property
    def can_retry(self) -> bool:
        return self.job.is_finished and services.job_can_retry(self.job)


def job_lines(jobs: Sequence[Job]) -> list[JobLine]:
    """JobLines for jobs; each kind describes its jobs in one call (a few queries per kind shown)."""
    descriptions: dict[int, JobDescription] = {}
    by_kind: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_kind[job.kind].append(job)
    for kind, of_kind in by_kind.items():
        try:
            describe = job_type_for(kind).describe
        except LookupError:
            continue
        if describe is not None:
            descriptions |= describe(of_kind)
    now = timezone.now()
    return [
        JobLine(
            job=job,
            description=_with_retry_link(job, descriptions.get(job.pk, JobDescription())),
            elapsed_seconds=services.job_elapsed_seconds(job, now=now),
            eta_seconds=services.job_seconds_remaining(job, now=now),
        )
        for job in jobs
    ]


def _with_retry_link(job: Job, description: JobDescription) -> JobDescription:
    """A retried job links the job it retries (parameters["retry_of"]), whatever its kind."""
    origin = job.parameters.get("retry_of")
    if not isinstance(origin, int):
        return description
    link = JobLink(f"The job it retries (#{origin})", reverse("jobs:job_detail", args=[origin]))
    return replace(description, links=(*description.links, link))


@staff_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    """Queued and running jobs first (all of them), then finished ones, 50 a page."""
    active = list(Job.objects.select_related("created_by").active())
    finished = Job.objects.select_related("created_by").exclude(status__in=ACTIVE_STATUSES)
    page = Paginator(finished, 50).get_page(request.GET.get("page"))
    lines = job_lines([*active, *page.object_list])
    context = {
        "active_lines": lines[: len(active)],
        "finished_lines": lines[len(active) :],
        "page": page,
        "can_run": can_run_jobs(request),
        "start_hints": [t.start_hint for t in job_types() if t.start_hint],
        "page_links": start_links(),
    }
    return render(request, "jobs/jobs.html", context)


@staff_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The job page. An htmx poll gets its panel (job page) or its row (jobs list), without the poll trigger
    once the job is finished, so polling stops."""
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    if wants_fragment(request):
        return _job_fragment(request, job)
    context = {"line": job_lines([job])[0], "can_run": can_run_jobs(request)}
    return render(request, "jobs/job_detail.html", context)


def _job_fragment(request: HtmxHttpRequest, job: Job) -> HttpResponse:
    """The job's panel when the job page asks (target #job-panel), else its row of the jobs list."""
    context = {"line": job_lines([job])[0], "can_run": can_run_jobs(request)}
    if request.htmx.target == "job-panel":
        return render(request, "jobs/job_detail.html#job-panel", context)
    response = render(request, "jobs/jobs.html#job-row", context)
    if job.is_finished:  # finished here or in another tab: the list moves it from "Running" to "Finished"
        trigger_client_event(response, "jobs-changed")
    return response


def _run_permission_required(request: HttpRequest) -> None:
    if not can_run_jobs(request):
        raise PermissionDenied("Cancelling or retrying jobs needs the 'add job' permission.")


@staff_required
@require_POST
def job_cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running job; htmx gets the updated fragment, a form post the job page."""
    _run_permission_required(request)
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    was_finished = job.is_finished
    if not was_finished:
        job = services.job_cancel(job=job)
    if wants_fragment(request):  # the button's row or panel, swapped in place: no message needed
        return _job_fragment(request, job)
    if was_finished:
        messages.info(request, f"Job #{job.pk} had already finished ({job.get_status_display()}).")
    else:
        messages.success(request, f"Job #{job.pk} cancelled.")
    return redirect("jobs:job_detail", pk=job.pk)


@staff_required
@require_POST
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a new job over the failed items of a finished job of a retryable kind."""
    _run_permission_required(request)
    job = get_object_or_404(Job, pk=pk)
    if not JobLine(job).can_retry:
        messages.error(request, f"Job #{job.pk} has no failed items of a retryable kind to retry.")
        return redirect("jobs:job_detail", pk=job.pk)
    try:
        retry = services.job_retry_failed(job=job, created_by=request_user(request))
    except services.NothingToRetry as nothing:
        messages.warning(request, f"{nothing} No job was started.")
        return redirect("jobs:job_detail", pk=job.pk)
    messages.success(
        request, f"Started job #{retry.pk} over the {retry.total} failed item(s) of job #{job.pk}."
    )
    return redirect("jobs:job_detail", pk=retry.pk)
