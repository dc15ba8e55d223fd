"""HTML pages for staff: leaderboard, How2Score by topic (heatmap), judges' rank correlations, failure
browser, generator, generation (L1 vs L2 with critical failures, judges' and humans'), jobs.

A page and its htmx update render the same `{% partialdef %}` fragment; htmx links also work as plain links.
Jobs: running ones poll their row (list) or panel (job page) every 2 s until they finish; staff with the
judging.add_job permission can cancel them or retry their failed items (POST, CSRF).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from . import charts, failures, rankings, selectors
from .models import CriticalFailure, Generation, Generator, Job, JobKind, JobStatus, Judge, Judgment

if TYPE_CHECKING:
    from annotation.models import AnnotatedFailure

View = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def staff_required(view: View) -> View:
    """Anonymous users go to the login page; signed-in non-staff users get 403."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return wrapped


def _query_ids(request: HttpRequest, name: str) -> list[str]:
    return [v.strip() for raw in request.GET.getlist(name) for v in raw.split(",") if v.strip()]


# --- Leaderboard ---


@dataclass(frozen=True)
class LeaderboardLine:
    row: selectors.LeaderboardRow
    rank: int  # among the generators scored by the same judge: scores by different judges don't compare
    generator_pk: int | None
    judge_is_demo: bool
    metrics: selectors.GeneratorMetrics


def _leaderboard_lines(judge_ids: list[str], judges: list[Judge]) -> list[LeaderboardLine]:
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    # One grouped query gives each generator's metrics and its row id (every judged generator has L2).
    metrics = selectors.generator_metrics(generator_ids={r.generator_id for r in rows}) if rows else {}
    demo = {j.judge_id for j in judges if j.is_demo_model}
    ranks: Counter[str] = Counter()
    lines = []
    for row in rows:
        ranks[row.judge_id] += 1
        lines.append(
            LeaderboardLine(
                row,
                ranks[row.judge_id],
                metrics[row.generator_id].generator_pk if row.generator_id in metrics else None,
                row.judge_id in demo,
                metrics.get(row.generator_id, selectors.GeneratorMetrics()),
            )
        )
    return lines


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An htmx swap asks for the fragment; a history restore needs the whole page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def leaderboard(request: HtmxHttpRequest) -> HttpResponse:
    judge_ids = _query_ids(request, "judge")
    judges = list(Judge.objects.order_by("model", "judge_id"))
    lines = _leaderboard_lines(judge_ids, judges)
    context = {
        "lines": lines,
        "metrics_missing": any(not line.metrics.is_complete for line in lines),
        "judges": judges,
        "selected_judge": judge_ids[0] if len(judge_ids) == 1 else "",
        "judge_query": ",".join(judge_ids),
        "has_demo_judge": any(j.is_demo_model for j in judges),
    }
    template = (
        "judging/leaderboard.html#leaderboard-table"
        if wants_fragment(request)
        else "judging/leaderboard.html"
    )
    return render(request, template, context)


@staff_required
@require_GET
def leaderboard_csv(request: HttpRequest) -> HttpResponse:
    rows = selectors.how2score_leaderboard(judge_ids=_query_ids(request, "judge"))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="how2score_leaderboard.csv"'
    fields = [
        *selectors.LeaderboardRow("", "", "", "", selectors.How2Score(0, 0, 0, 0)).as_json(),
        *selectors.GeneratorMetrics().as_json(),
    ]
    writer = csv.DictWriter(response, fieldnames=fields)
    writer.writeheader()
    writer.writerows(selectors.leaderboard_metrics_json(rows))
    return response


# --- How2Score by topic (heatmap) ---


def _heatmap_judge(request: HttpRequest, judges: list[Judge]) -> Judge | None:
    """The judge asked for, else the first judge that is not a demo model, else the first judge."""
    wanted = request.GET.get("judge", "").strip()
    if wanted:
        return next((j for j in judges if j.judge_id == wanted), None)
    return next((j for j in judges if not j.is_demo_model), judges[0] if judges else None)


def _heatmap_for(judge: Judge | None, strict: bool) -> charts.Heatmap | None:
    if judge is None:
        return None
    rows = selectors.how2score_by_topic(judge_ids=[judge.judge_id])
    return charts.heatmap(rows, judge_id=judge.judge_id, strict=strict)


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def topic_heatmap(request: HtmxHttpRequest) -> HttpResponse:
    """How2Score per generator x topic for one judge (h2e or strict), as an SVG heatmap."""
    judges = list(Judge.objects.order_by("model", "judge_id"))
    judge = _heatmap_judge(request, judges)
    strict = request.GET.get("score") == "strict"
    grid = _heatmap_for(judge, strict)
    svg = charts.heatmap_svg(grid, judge_label=judge.model) if judge and grid and grid.rows else None
    context = {
        "judges": judges,
        "judge": judge,
        "unknown_judge": request.GET.get("judge", "").strip() if judge is None else "",
        "strict": strict,
        "grid": grid,
        "svg": svg,
        "query": _query({"judge": judge.judge_id if judge else "", "score": "strict" if strict else ""}),
    }
    template = "judging/heatmap.html#heatmap" if wants_fragment(request) else "judging/heatmap.html"
    return render(request, template, context)


@staff_required
@require_GET
def topic_heatmap_csv(request: HttpRequest) -> HttpResponse:
    judges = list(Judge.objects.order_by("model", "judge_id"))
    judge = _heatmap_judge(request, judges)
    strict = request.GET.get("score") == "strict"
    grid = _heatmap_for(judge, strict)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="how2score_by_topic.csv"'
    writer = csv.DictWriter(response, fieldnames=charts.HEATMAP_CSV_FIELDS)
    writer.writeheader()
    writer.writerows(grid.csv_rows() if grid else [])
    return response


def _query(params: dict[str, str]) -> str:
    """A query string of the non-empty params ("" when there are none)."""
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in params.items() if v})
    return query.urlencode()


# --- Judges' rank correlations (cross-judge robustness) ---


@staff_required
@require_GET
def rank_correlation(request: HttpRequest) -> HttpResponse:
    """Kendall tau-b and Spearman rho between every two judges' rankings of the generators both judged."""
    strict = request.GET.get("score") == "strict"
    result = rankings.judge_rank_correlations(strict=strict)
    context = {"result": result, "matrix": result.matrix(), "strict": strict}
    return render(request, "judging/rank_correlation.html", context)


# --- Failure browser ---


@dataclass(frozen=True)
class FailureOptions:
    """What the failure filters offer (also the name -> id maps that resolve them: no extra query)."""

    topics: list[tuple[int, str]]
    generators: list[tuple[int, str, str]]
    judges: list[tuple[int, str, str]]
    studies: list[tuple[int, str, str]]

    def choices(self) -> failures.FilterChoices:
        return failures.FilterChoices(
            topics={name: pk for pk, name in self.topics},
            generators={gid: pk for pk, gid, _ in self.generators},
            judges={jid: pk for pk, jid, _ in self.judges},
            studies={slug: pk for pk, slug, _ in self.studies},
        )


def _failure_options() -> FailureOptions:
    from annotation.models import Study
    from mining.models import Topic

    return FailureOptions(
        topics=list(Topic.objects.order_by("name").values_list("pk", "name")),
        generators=list(
            Generator.objects.order_by("model", "generator_id").values_list("pk", "generator_id", "model")
        ),
        judges=list(Judge.objects.order_by("model", "judge_id").values_list("pk", "judge_id", "model")),
        studies=list(Study.objects.order_by("slug").values_list("pk", "slug", "title")),
    )


def _cursor(token: str | None) -> failures.Cursor | None:
    try:
        return failures.Cursor.decode(token) if token else None
    except ValueError:
        return None  # a mangled link starts again at the first page


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def failure_list(request: HtmxHttpRequest) -> HttpResponse:
    """Critical failures from judges and humans, filtered, newest generation first, 50 a page (keyset)."""
    query = failures.FailureQuery.from_params(request.GET)
    options = _failure_options()
    filters = failures.failure_filters_resolve(query, options.choices())
    cursor = _cursor(request.GET.get("cursor"))
    page = failures.failure_page(filters=filters, cursor=cursor)
    counts = failures.failure_counts_by_topic(filters=filters)
    chart_items = [
        (c.topic, c.total, "?" + _query(query.params(topic=c.topic)) if c.topic != failures.NO_TOPIC else "")
        for c in counts
    ]
    context = {
        "query": query,
        "options": options,
        "page": page,
        "cursor": cursor,
        "counts": counts,
        "total": sum(c.total for c in counts),
        "chart": charts.bar_chart_svg(chart_items, title="Critical failures per topic", unit="failures")
        if counts
        else None,
        "filter_query": _query(query.params()),
        "next_query": _query({**query.params(), "cursor": page.next_cursor}) if page.next_cursor else "",
        "full_text": failures.is_full_text(),
    }
    template = "judging/failures.html#failure-results" if wants_fragment(request) else "judging/failures.html"
    return render(request, template, context)


# --- Generator ---


@staff_required
@require_GET
def generator_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generator = get_object_or_404(Generator, pk=pk)
    judges = list(Judge.objects.filter(pk__in=_judge_pks_of(generator)).order_by("model", "judge_id"))
    generations = (
        Generation.objects.filter(generator=generator)
        .select_related("procedure__topic")
        .prefetch_related(
            Prefetch(
                "judgments",
                queryset=Judgment.objects.only(
                    "id", "generation_id", "judge_id", "parse_failed", "has_failure", "n_failures"
                ),
            )
        )
        .order_by("procedure__source_example_id")
    )
    page = Paginator(generations, 50).get_page(request.GET.get("page"))
    rows = [(g, _verdicts_by_judge(g, judges)) for g in page.object_list]
    scores = selectors.how2score_leaderboard(generator_ids=[generator.generator_id])
    context = {
        "generator": generator,
        "judges": judges,
        "demo_judge_ids": {j.judge_id for j in judges if j.is_demo_model},
        "page": page,
        "rows": rows,
        "scores": scores,
    }
    return render(request, "judging/generator.html", context)


def _judge_pks_of(generator: Generator) -> list[int]:
    return list(
        Judgment.objects.filter(generator=generator).order_by().values_list("judge_id", flat=True).distinct()
    )


def _verdicts_by_judge(generation: Generation, judges: list[Judge]) -> list[Judgment | None]:
    by_judge = {j.judge_id: j for j in generation.judgments.all()}
    return [by_judge.get(judge.pk) for judge in judges]


# --- Generation ---


@dataclass(frozen=True)
class StepLink:
    """A step number a critical failure points at; `valid` is False when the step list has no such step."""

    label: str
    number: int | None
    valid: bool


@dataclass(frozen=True)
class FailureView:
    failure: CriticalFailure | AnnotatedFailure  # a judge's or a human annotator's
    l1: list[StepLink]
    l2: list[StepLink]
    source: str = "judge"

    @property
    def token(self) -> str:
        """`judge-<id>` / `human-<id>`: the ?failure= value and the element id suffix."""
        return f"{self.source}-{self.failure.pk}"

    @property
    def l1_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l1 if s.valid)

    @property
    def l2_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l2 if s.valid)


def step_links(values: Any, n_steps: int) -> list[StepLink]:
    """Step numbers as judged (1-based), each checked against the step list; odd values never raise."""
    links = []
    for value in values if isinstance(values, list) else [values]:
        number = None
        if not isinstance(value, bool):
            try:
                number = int(str(value).strip())
            except ValueError:
                number = None
        valid = number is not None and 1 <= number <= n_steps
        links.append(StepLink(label=str(value), number=number, valid=valid))
    return links


@staff_required
@require_GET
def generation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generation = get_object_or_404(Generation.objects.select_related("generator", "procedure__topic"), pk=pk)
    l1_steps: list[Any] = list(generation.procedure.steps or [])
    l2_steps: list[Any] = list(generation.predicted_steps or [])
    judgments = generation.judgments.select_related("judge").prefetch_related(
        Prefetch("failures", queryset=CriticalFailure.objects.order_by("order"))
    )
    judged = [
        (
            judgment,
            [
                FailureView(f, step_links(f.l1_steps, len(l1_steps)), step_links(f.l2_steps, len(l2_steps)))
                for f in judgment.failures.all()
            ],
        )
        for judgment in judgments.order_by("judge__model", "judge__judge_id")
    ]
    annotated = _human_annotations(generation, len(l1_steps), len(l2_steps))
    selected = _selected_failure(request.GET.get("failure", ""), judged, annotated)
    context = {
        "generation": generation,
        "l1_steps": l1_steps,
        "l2_steps": l2_steps,
        "judged": judged,
        "annotated": annotated,
        "selected": selected,
        "selected_l1": {s.number for s in selected.l1 if s.valid} if selected else set(),
        "selected_l2": {s.number for s in selected.l2 if s.valid} if selected else set(),
    }
    return render(request, "judging/generation.html", context)


def _human_annotations(generation: Generation, n_l1: int, n_l2: int) -> list[tuple[Any, list[FailureView]]]:
    """The study annotations of this generation (attention checks left out), each with its failures."""
    from annotation.models import AnnotatedFailure, Annotation

    annotations = (
        Annotation.objects.filter(item__generation=generation, item__is_attention_check=False)
        .select_related("study")
        .prefetch_related(Prefetch("failures", queryset=AnnotatedFailure.objects.order_by("order")))
        .order_by("study__slug", "submitted_at", "id")
    )
    return [
        (
            annotation,
            [
                FailureView(f, step_links(f.l1_steps, n_l1), step_links(f.l2_steps, n_l2), "human")
                for f in annotation.failures.all()
            ],
        )
        for annotation in annotations
    ]


def _selected_failure(
    token: str, judged: list[tuple[Any, list[FailureView]]], annotated: list[tuple[Any, list[FailureView]]]
) -> FailureView | None:
    """The failure named by ?failure=judge-<id> or human-<id>, if it is on this page."""
    parsed = failures.parse_token(token)
    if parsed is None:
        return None
    groups = judged if parsed[0] == "judge" else annotated
    return next((v for _, views in groups for v in views if v.failure.pk == parsed[1]), None)


# --- Jobs ---

RUN_PERMISSION = "judging.add_job"


@dataclass(frozen=True)
class JobLine:
    """A job as the jobs pages show it: the row, what it runs on, its clock."""

    job: Job
    generator: Generator | None
    judge: Judge | None
    elapsed_seconds: float | None
    eta_seconds: float | None

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
        return self.job.is_finished and bool(self.job.failed) and self.job.kind in _RUN_KINDS


_RUN_KINDS = {JobKind.GENERATE, JobKind.JUDGE}


def format_duration(seconds: float | None) -> str:
    """12 s, 3 min 05 s, 2 h 07 min; "" for None."""
    if seconds is None:
        return ""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def job_lines(jobs: list[Job]) -> list[JobLine]:
    """JobLines for jobs; generators and judges are fetched only when a job names one (one query each)."""
    from .runs import job_seconds_remaining

    generator_pks = {j.parameters.get("generator") for j in jobs} - {None}
    judge_pks = {j.parameters.get("judge") for j in jobs} - {None}
    generators = Generator.objects.in_bulk(list(generator_pks)) if generator_pks else {}
    judges = Judge.objects.in_bulk(list(judge_pks)) if judge_pks else {}
    now = timezone.now()
    return [
        JobLine(
            job=job,
            generator=generators.get(job.parameters.get("generator")),
            judge=judges.get(job.parameters.get("judge")),
            elapsed_seconds=selectors.job_elapsed_seconds(job, now=now),
            eta_seconds=job_seconds_remaining(job, now=now),
        )
        for job in jobs
    ]


def _can_run(request: HttpRequest) -> bool:
    return request.user.has_perm(RUN_PERMISSION)


@staff_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    """Queued and running jobs first (all of them), then finished ones, 50 a page."""
    unfinished = [JobStatus.QUEUED, JobStatus.RUNNING]
    active = list(Job.objects.select_related("created_by").filter(status__in=unfinished))
    finished = Job.objects.select_related("created_by").exclude(status__in=unfinished)
    page = Paginator(finished, 50).get_page(request.GET.get("page"))
    lines = job_lines([*active, *page.object_list])
    context = {
        "active_lines": lines[: len(active)],
        "finished_lines": lines[len(active) :],
        "page": page,
        "can_run": _can_run(request),
    }
    return render(request, "judging/jobs.html", context)


@staff_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The job page. An htmx poll gets its panel (job page) or its row (jobs list), without the poll trigger
    once the job is finished, so polling stops."""
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    if wants_fragment(request):
        return _job_fragment(request, job)
    context = {"line": job_lines([job])[0], "can_run": _can_run(request)}
    return render(request, "judging/job_detail.html", context)


def _job_fragment(request: HtmxHttpRequest, job: Job) -> HttpResponse:
    """The job's panel when the job page asks (target #job-panel), else its row of the jobs list."""
    context = {"line": job_lines([job])[0], "can_run": _can_run(request)}
    if request.htmx.target == "job-panel":
        return render(request, "judging/job_detail.html#job-panel", context)
    return render(request, "judging/jobs.html#job-row", context)


def _run_permission_required(request: HttpRequest) -> None:
    if not _can_run(request):
        raise PermissionDenied("Cancelling or retrying jobs needs the 'add job' permission.")


@staff_required
@require_POST
def job_cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running job; htmx gets the updated fragment, a form post the job page."""
    from .runs import job_cancel as cancel

    _run_permission_required(request)
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    was_finished = job.is_finished
    if not was_finished:
        job = cancel(job=job)
    if wants_fragment(request):  # the button's row or panel, swapped in place: no message needed
        return _job_fragment(request, job)
    if was_finished:
        messages.info(request, f"Job #{job.pk} had already finished ({job.get_status_display()}).")
    else:
        messages.success(request, f"Job #{job.pk} cancelled.")
    return redirect("judging:job_detail", pk=job.pk)


@staff_required
@require_POST
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a new job over the failed items of a finished generate or judge job."""
    from .runs import job_retry_failed

    _run_permission_required(request)
    job = get_object_or_404(Job, pk=pk)
    if not JobLine(job, None, None, None, None).can_retry:
        messages.error(request, f"Job #{job.pk} has no failed generate or judge items to retry.")
        return redirect("judging:job_detail", pk=job.pk)
    retry = job_retry_failed(job=job)
    messages.success(
        request, f"Started job #{retry.pk} over the {retry.total} failed item(s) of job #{job.pk}."
    )
    return redirect("judging:job_detail", pk=retry.pk)
