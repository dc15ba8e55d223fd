"""Staff pages of judge probes: /probes/ lists every probe with its figures and the "Start a judge probe"
form (POST /probes/start/ needs jobs.add_job), /probes/<pk>/ shows one probe: its job's row, live while it
runs, its figures and its items. When the job finishes its row fires "jobs-changed" and the page's body
reloads (htmx, the same fragment)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from h2e_site.inputs import BadInput
from h2e_site.jobs.views import job_lines
from h2e_site.llm.config import ConfigError
from h2e_site.web import HtmxHttpRequest, can_run_jobs, request_user, staff_required, wants_fragment

from .forms import JudgeProbeForm
from .jobs import judge_probe_create
from .models import JudgeProbe
from .results import probe_results

RECENT_PROBES = 50


def _list_context(request: HttpRequest, form: JudgeProbeForm) -> dict[str, object]:
    probes = JudgeProbe.objects.select_related("judge", "generator", "job").prefetch_related("items")
    return {
        "results": [probe_results(probe) for probe in probes[:RECENT_PROBES]],
        "form": form,
        "can_run": can_run_jobs(request),
    }


@staff_required
@require_GET
def probes_page(request: HttpRequest) -> HttpResponse:
    """The probes, newest first, and the form that starts one."""
    return render(request, "judging/probes.html", _list_context(request, JudgeProbeForm()))


@staff_required
@require_POST
def probe_start(request: HttpRequest) -> HttpResponse:
    """Start a probe; its page follows the job. A field that cannot be used: the form again, 400."""
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    form = JudgeProbeForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            probe = judge_probe_create(**data, created_by=request_user(request))
        except BadInput as refused:
            form.add_error(refused.field if refused.field in form.fields else None, refused.message)
        except ConfigError as refused:  # the judge cannot run (an imported judge without a config)
            form.add_error("judge", str(refused))
        else:
            messages.success(
                request, f"Started job #{probe.job_id}: {probe.get_kind_display()} on {probe.n} L2."
            )
            return redirect("judging:probe_detail", pk=probe.pk)
    return render(request, "judging/probes.html", _list_context(request, form), status=400)


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def probe_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A probe; its body alone when htmx reloads it after the job finished."""
    probe = get_object_or_404(JudgeProbe.objects.select_related("judge", "generator", "job"), pk=pk)
    items = list(probe.items.select_related("generation__procedure"))
    result = probe_results(probe, items)
    context = {
        "probe": probe,
        "result": result,
        "result_list": [result],
        "items": items,
        "job_lines": job_lines([probe.job]) if probe.job else [],
        "can_run": can_run_jobs(request),
    }
    template = "judging/probe.html#probe-body" if wants_fragment(request) else "judging/probe.html"
    return render(request, template, context)
