"""Failures by meaning (staff): a failure's similar failures (/failures/<judge-12|human-7>/similar/, a page,
or its list for htmx) and a topic's failure patterns (/failures/patterns/<topic id>/: the last clustering,
and a form starting the `failure_patterns` job). annotation/failures/meaning/ has the definitions; numpy and
faiss are imported by the views that search, when they run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from annotation.base.job_kinds import FAILURE_PATTERNS
from annotation.base.models import AnnotatedFailure
from annotation.failures import reads as failures
from annotation.failures.meaning.forms import FailurePatternsForm
from annotation.failures.meaning.jobs import TooFewFailures, failure_patterns_job_create
from annotation.failures.meaning.models import HUMAN, JUDGE, ClusterShare, FailurePattern, FailurePatternRun
from h2e_site.bounds import OutOfRange
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.views import job_lines
from h2e_site.web import HtmxHttpRequest, can_run_jobs, request_user, staff_required, wants_fragment
from judging.models import CriticalFailure, Generator, Judge
from mining.models import Topic

RECENT_JOBS = 5
RECENT_RUNS = 10


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def similar_failures(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """The failures nearest this one by meaning; 404 for a token that names no failure the browser lists."""
    from annotation.failures.meaning.space import failure_seen, similar_failures  # numpy, faiss

    parsed = failures.parse_token(token)
    failure = failure_seen(*parsed) if parsed else None
    if failure is None:
        raise Http404("No such critical failure.")
    context = {"similar": similar_failures(failure)}
    if wants_fragment(request):
        return render(request, "annotation/similar_failures.html#similar-list", context)
    return render(request, "annotation/similar_failures.html", context)


@staff_required
@require_GET
def pattern_topics(request: HttpRequest) -> HttpResponse:
    """Every topic with failures, and its latest failure patterns."""
    latest: dict[int, FailurePatternRun] = {}
    for run in FailurePatternRun.objects.order_by("-created_at", "-pk").annotate(n=Count("patterns")):
        latest.setdefault(run.topic_id, run)
    counts = failures.failure_counts_by_topic(filters=failures.FailureFilters())
    topics = {t.name: t for t in Topic.objects.filter(name__in=[c.topic for c in counts])}
    rows = [(topics[c.topic], c, latest.get(topics[c.topic].pk)) for c in counts if c.topic in topics]
    return render(request, "annotation/failure_pattern_topics.html", {"rows": rows})


@staff_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request", "HX-Target")
def failure_patterns(request: HtmxHttpRequest, topic: int) -> HttpResponse:
    """A topic's failure patterns (the latest run, or ?run=<id>); POST starts a new clustering."""
    topic_row = get_object_or_404(Topic, pk=topic)
    if request.method == "POST":
        return _start(request, topic_row)
    context = _patterns_context(request, topic_row)
    if wants_fragment(request) and request.headers.get("HX-Target") == "pattern-results":
        return render(request, "annotation/failure_patterns.html#pattern-results", context)
    return render(request, "annotation/failure_patterns.html", {**context, "form": FailurePatternsForm()})


def _start(request: HtmxHttpRequest, topic: Topic) -> HttpResponse:
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    form = FailurePatternsForm(request.POST)
    if form.is_valid():
        try:
            job = failure_patterns_job_create(
                topic=topic, k=form.cleaned_data["k"], seed=form.cleaned_data["seed"],
                created_by=request_user(request),
            )  # fmt: skip
        except OutOfRange as refused:  # k above the topic's failures with a vector (the message says so)
            form.add_error(refused.field, refused.message)
        except TooFewFailures as refused:
            form.add_error(None, refused.message)
        else:
            chosen = " (k chosen from the data)" if job.parameters.get("k_chosen") else ""
            job.refresh_from_db()
            if job.status != JobStatus.FAILED:  # else not queued: JobsNotQueuedMiddleware says so
                messages.success(
                    request, f"Started job #{job.pk}: {job.parameters['k']} patterns of {topic.name}{chosen}."
                )
            return redirect("failures:failure_patterns", topic=topic.pk)
    context = {**_patterns_context(request, topic), "form": form}
    return render(request, "annotation/failure_patterns.html", context, status=400)


def _patterns_context(request: HttpRequest, topic: Topic) -> dict[str, Any]:
    runs = FailurePatternRun.objects.filter(topic=topic).select_related("embedding_model", "job")
    run = _chosen_run(request, runs)
    patterns = (
        list(run.patterns.defer("judge_members", "human_members").order_by("rank")) if run is not None else []
    )
    jobs = Job.objects.select_related("created_by").filter(kind=FAILURE_PATTERNS, parameters__topic=topic.pk)
    generations = _representatives_generations(patterns)
    models = _models(run) if run is not None else {}
    return {
        "topic": topic,
        "run": run,
        "patterns": [
            PatternView(p, p.shares(run, models), generations.get(p.representative_token))
            for p in patterns
            if run is not None
        ],
        "earlier_runs": list(runs.order_by("-created_at", "-pk")[:RECENT_RUNS]),
        "job_lines": job_lines(list(jobs[:RECENT_JOBS])),
        "can_run": can_run_jobs(request),
    }


@dataclass(frozen=True)
class PatternView:
    pattern: FailurePattern
    shares: dict[str, list[ClusterShare]]
    generation_id: int | None  # the representative's generation (None: deleted since)


def _models(run: FailurePatternRun) -> dict[str, str]:
    """generator_id / judge_id -> its model's name, for the run's generators and judges (two queries)."""
    generators = Generator.objects.filter(generator_id__in=list(run.by_generator))
    judges = Judge.objects.filter(judge_id__in=list(run.by_judge))
    return dict(generators.values_list("generator_id", "model")) | dict(
        judges.values_list("judge_id", "model")
    )


def _representatives_generations(patterns: list[FailurePattern]) -> dict[str, int]:
    """`judge-12` / `human-7` -> its generation, for the representatives (two queries)."""
    judge = [p.representative_pk for p in patterns if p.representative_source == JUDGE]
    human = [p.representative_pk for p in patterns if p.representative_source == HUMAN]
    found = {
        f"judge-{pk}": g
        for pk, g in CriticalFailure.objects.filter(pk__in=judge).values_list("pk", "judgment__generation_id")
    }
    rows = AnnotatedFailure.objects.filter(pk__in=human).values_list("pk", "annotation__item__generation_id")
    return found | {f"human-{pk}": g for pk, g in rows}


def _chosen_run(request: HttpRequest, runs: Any) -> FailurePatternRun | None:
    """?run=<id> (one of this topic's runs: else 404), or the latest."""
    asked = request.GET.get("run", "")
    if not asked:
        return runs.order_by("-created_at", "-pk").first()  # type: ignore[no-any-return]
    if not asked.isdigit() or len(asked) > 18:
        raise Http404("run: not a run of this topic")
    return get_object_or_404(runs, pk=int(asked))  # type: ignore[no-any-return]


def pattern_of(pk: int | None) -> FailurePattern | None:
    """The pattern a failure-browser filter names, with its run and topic (for the page's heading)."""
    if pk is None:
        return None
    return (
        FailurePattern.objects.select_related("run__topic").defer("judge_members", "human_members").get(pk=pk)
    )
