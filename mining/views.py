"""Staff pages of a mining run: the yield funnel (paper table 6) and, per stage, the documents it rejected.

They are served under the run's admin URLs (MiningRunAdmin.get_urls): /admin/mining/miningrun/<pk>/funnel/
and .../funnel/<stage>/rejected/. Each is one view with two renderings: the page, or its fragment for htmx
(the funnel table polls while the run is running; the rejection list pages in place). Links work without
JavaScript. Anonymous users go to the login page; signed-in non-staff users get 403.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from h2e_site.web import HtmxHttpRequest, staff_required, wants_fragment

from .models import STAGE_ORDER, MiningRun, RunStatus, Stage
from .selectors import NO_TOPIC, run_funnel, run_unstored, stage_rejections

REJECTIONS_PER_PAGE = 50
ACTIVE = {RunStatus.QUEUED, RunStatus.RUNNING}


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def run_funnel_page(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The run's funnel: per topic and stage, processed / passed / yield %, tokens and cost."""
    run = get_object_or_404(MiningRun.objects.select_related("job"), pk=pk)
    funnel = run_funnel(run)
    all_stored = funnel.total.stored == funnel.total.cells[-1].passed
    context = {
        "run": run,
        "funnel": funnel,
        "unstored": [] if all_stored else run_unstored(run),
        "polling": run.status in ACTIVE,
    }
    template = "mining/funnel.html#funnel-table" if wants_fragment(request) else "mining/funnel.html"
    return render(request, template, context)


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def stage_rejections_page(request: HtmxHttpRequest, pk: int, stage: str) -> HttpResponse:
    """The documents `stage` rejected in the run, with the reason, 50 a page (optionally one topic's)."""
    if stage not in STAGE_ORDER:
        raise Http404("no such stage")
    run = get_object_or_404(MiningRun, pk=pk)
    topic = request.GET.get("topic", "")
    page = Paginator(stage_rejections(run, stage, topic=topic or None), REJECTIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "run": run,
        "stage": stage,
        "stage_label": Stage(stage).label,
        "topic": topic,
        "no_topic": NO_TOPIC,
        "page": page,
    }
    template = (
        "mining/rejections.html#rejections-list" if wants_fragment(request) else "mining/rejections.html"
    )
    return render(request, template, context)
