"""Staff pages of How2Mine.

- /mining/ (the "Mining" entry of the navigation): the runs, newest first, and the "Mine" form, which starts a
  run of a config of configs/mining/ over the imported documents as a job (POST /mining/start/, jobs.add_job).
- /mining/runs/<pk>/: a run's page: its job's row (live), and per stage how many documents entered, passed
  and were dropped, with the commonest reasons; it reloads every three seconds while the run is running.
- The full funnel (paper table 6: per topic and stage, tokens, cost) and, per stage, the documents it
  rejected are served under the run's admin URLs (MiningRunAdmin.get_urls):
  /admin/mining/miningrun/<pk>/funnel/ and .../funnel/<stage>/rejected/.
Each is one view with two renderings: the page, or its fragment for htmx. Links work without JavaScript.
Anonymous users go to the login page; signed-in non-staff users get 403."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from h2e_site.jobs.views import job_lines
from h2e_site.web import HtmxHttpRequest, can_run_jobs, request_user, staff_required, wants_fragment

from .forms import MineForm
from .models import STAGE_ORDER, MiningRun, Procedure, RunStatus, SourceDocument, Split, Stage
from .runs import mining_run_create
from .selectors import NO_TOPIC, run_funnel, run_stage_drops, run_unstored, stage_rejections

REJECTIONS_PER_PAGE = 50
RUNS_SHOWN = 50
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


def _mine_context(request: HttpRequest, form: MineForm) -> dict[str, object]:
    runs = MiningRun.objects.select_related("job").annotate(n_documents=Count("documents"))
    documents = SourceDocument.objects.aggregate(n=Count("id"), topics=Count("topic", distinct=True))
    splits = dict.fromkeys(Split.values, 0) | dict(
        Procedure.objects.order_by().values_list("split").annotate(n=Count("id")).values_list("split", "n")
    )
    return {
        "runs": runs[:RUNS_SHOWN],
        "documents": documents,
        "splits": splits,
        "form": form,
        "can_run": can_run_jobs(request),
    }


@staff_required
@require_GET
def mine_page(request: HttpRequest) -> HttpResponse:
    """The runs, newest first, and the Mine form."""
    return render(request, "mining/mine.html", _mine_context(request, MineForm()))


@staff_required
@require_POST
def mine_start(request: HttpRequest) -> HttpResponse:
    """Start a run of the chosen config over the imported documents (a MINE job); its page follows it."""
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    form = MineForm(request.POST)
    if not form.is_valid():
        return render(request, "mining/mine.html", _mine_context(request, form), status=400)
    run = mining_run_create(
        config=form.cleaned_data["config"], name=form.cleaned_data["name"], created_by=request_user(request)
    )
    messages.success(request, f"Started job #{run.job_id}: mining run #{run.pk} ({run.name}).")
    return redirect("mine:run", pk=run.pk)


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def run_page(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The run: its job's row and, per stage, what entered, passed and was dropped, and why."""
    run = get_object_or_404(MiningRun.objects.select_related("job"), pk=pk)
    funnel = run_funnel(run)
    context = {
        "run": run,
        "funnel": funnel,
        "drops": run_stage_drops(run, funnel),
        "run_job_lines": job_lines([run.job]) if run.job else [],
        "polling": run.status in ACTIVE,
        "can_run": can_run_jobs(request),
    }
    template = "mining/run.html#run-body" if wants_fragment(request) else "mining/run.html"
    return render(request, template, context)
