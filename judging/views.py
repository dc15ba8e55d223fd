"""HTML pages for staff: leaderboard, How2Score by topic (heatmap), judges' rank correlations, generator.

A page and its htmx update render the same `{% partialdef %}` fragment; htmx links also work as plain links.
The pages that read judge and human failures together (failure browser, generation page) belong to the top
layer, the annotation app; the Jobs pages belong to the core (h2e_site.jobs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from h2e_site.web import (
    HtmxHttpRequest,
    SafeDictWriter,
    can_run_jobs,
    query_ids,
    query_string,
    request_user,
    staff_required,
    wants_fragment,
)
from mining.models import Procedure

from . import charts, compare, paired, rankings, selectors
from .admin.actions import JudgeWithForm
from .judge_jobs import judge_job_create
from .models import Generation, Generator, Judge, Judgment

# --- Leaderboard ---


@dataclass(frozen=True)
class LeaderboardLine:
    row: selectors.LeaderboardRow
    rank: int  # among the generators scored by the same judge: scores by different judges don't compare
    generator_pk: int | None
    judge_is_demo: bool
    metrics: selectors.GeneratorMetrics
    next_test: paired.PairedTest | None = None  # against the next generator down under the same judge
    mark: charts.ForestMark | None = None  # its point and interval on the page's forest plot

    @property
    def coverage_percent(self) -> float | None:
        return selectors.coverage_percent(self.row.score, self.metrics)

    @property
    def is_partial(self) -> bool:
        """Judged fewer than the generator's generations: a cancelled or unfinished run."""
        coverage = self.coverage_percent
        return coverage is not None and coverage < 100.0


def _with_paired_tests(
    lines: list[LeaderboardLine], pairs: dict[str, paired.JudgePairs]
) -> list[LeaderboardLine]:
    """Each line with its paired test against the next line down of the same judge."""
    result = []
    for line, below in zip(lines, [*lines[1:], None], strict=False):
        test = None
        if below is not None and below.row.judge_id == line.row.judge_id:
            judge_pairs = pairs.get(line.row.judge_id)
            test = judge_pairs.between(line.row.generator_id, below.row.generator_id) if judge_pairs else None
        result.append(replace(line, next_test=test))
    return result


def _leaderboard_lines(judge_ids: list[str], judges: list[Judge]) -> list[LeaderboardLine]:
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    # One grouped query gives each generator's metrics and its row id (every judged generator has L2).
    metrics = selectors.generator_metrics(generator_ids={r.generator_id for r in rows}) if rows else {}
    demo = {j.judge_id for j in judges if j.is_demo_model}
    rows.sort(key=lambda row: row.judge_id in demo)  # stable: a demo model's rows after the real judges'
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


# ?sort=<column> sorts ascending, ?sort=-<column> descending; without it the lines stay in rank order per
# judge. Values a line does not have (metrics not computed) sort last either way.
LEADERBOARD_SORTS: dict[str, Callable[[LeaderboardLine], Any]] = {
    "rank": lambda line: line.rank,
    "generator": lambda line: line.row.generator_model.lower(),
    "judge": lambda line: line.row.judge_model.lower(),
    "how2score": lambda line: line.row.score.how2score_percent,
    "strict": lambda line: line.row.score.strict_how2score_percent,
    "examples": lambda line: line.row.score.n_examples,
    "with_failures": lambda line: line.row.score.n_with_failures,
    "parse_failures": lambda line: line.row.score.n_parse_failed,
    "avg_failures": lambda line: line.row.score.avg_failures_per_example,
    "tokens": lambda line: line.metrics.avg_tokens,
}


class UnknownSort(ValueError):
    pass


def _sorted_lines(lines: list[LeaderboardLine], sort: str) -> list[LeaderboardLine]:
    """The lines in the order ?sort= asks for (stable: ties keep the rank order)."""
    if not sort:
        return lines
    column = sort.removeprefix("-")
    if column not in LEADERBOARD_SORTS:
        raise UnknownSort(f"sort: {sort[:60]!r} is not a column; sortable: {', '.join(LEADERBOARD_SORTS)}")
    key = LEADERBOARD_SORTS[column]
    present = [line for line in lines if key(line) is not None]
    missing = [line for line in lines if key(line) is None]
    return sorted(present, key=key, reverse=sort.startswith("-")) + missing


@dataclass(frozen=True)
class SortHeader:
    link: str  # the query string the column's header links to
    state: str  # its aria-sort: ascending, descending or none


def _sort_headers(judge_query: str, sort: str) -> dict[str, SortHeader]:
    """Per column: where its header links (ascending first for names and rank, descending first for figures;
    a second click reverses) and its aria-sort state."""
    headers = {}
    for column in LEADERBOARD_SORTS:
        ascending_first = column in {"rank", "generator", "judge"}
        if sort == column:
            target, state = f"-{column}", "ascending"
        elif sort == f"-{column}":
            target, state = column, "descending"
        else:
            target, state = (column if ascending_first else f"-{column}"), "none"
        params = {"judge": judge_query, "sort": target} if judge_query else {"sort": target}
        headers[column] = SortHeader(query_string(params), state)
    return headers


# ?judge=all: every judge in one table (scores by different judges don't compare, so the page shows one judge
# unless asked: the judge given, else selectors.default_judge).
ALL_JUDGES = "all"


def _leaderboard_judges(request: HttpRequest, judges: list[Judge]) -> tuple[list[str], str]:
    """The judge ids the leaderboard shows ([]: all judges), and the ?judge= the page was asked for ("" when
    it shows the default judge, which its sort links keep doing)."""
    asked = query_ids(request, "judge")
    if ALL_JUDGES in asked:
        return [], ALL_JUDGES
    if asked:
        return asked, ",".join(asked)
    default = selectors.default_judge(judges)
    return ([default.judge_id] if default else []), ""


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def leaderboard(request: HtmxHttpRequest) -> HttpResponse:
    judges = list(Judge.objects.by_model())
    judge_ids, asked = _leaderboard_judges(request, judges)
    lines = _leaderboard_lines(judge_ids, judges)
    pairs = paired.paired_tests(judge_ids or None, n_judgments=sum(line.row.score.total for line in lines))
    lines = _with_paired_tests(lines, pairs)
    sort = request.GET.get("sort", "").strip()
    try:
        lines = _sorted_lines(lines, sort)
    except UnknownSort as refusal:
        return HttpResponseBadRequest(str(refusal))
    by_id = {judge.judge_id: judge for judge in judges}
    axis = charts.forest_axis(line.row.score for line in lines)
    shown = ",".join(judge_ids)  # what the page shows, for the menu and the CSV link
    context = {
        "lines": [replace(line, mark=axis.mark(line.row.score)) for line in lines],
        "axis": axis,
        "sort": sort,
        "sort_headers": _sort_headers(asked, sort),
        "separability": sorted(  # in the table's order: the real judges first
            ((by_id[judge_id], p) for judge_id, p in pairs.items() if judge_id in by_id),
            key=lambda item: (item[0].is_demo_model, item[0].model, item[0].judge_id),
        ),
        "metrics_missing": any(not line.metrics.is_complete for line in lines),
        "judges": judges,
        "shown_judge": by_id.get(judge_ids[0]) if len(judge_ids) == 1 else None,
        "judge_query": shown or ALL_JUDGES,
        "csv_query": shown,
        "all_judges": ALL_JUDGES,
        "empty_reason": "" if lines else selectors.leaderboard_empty_reason(judge_ids=judge_ids),
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
    """The leaderboard's rows as CSV: every judge's without ?judge= (or with ?judge=all), as the API."""
    judge_ids = [] if ALL_JUDGES in (ids := query_ids(request, "judge")) else ids
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="how2score_leaderboard.csv"'
    fields = [
        *selectors.LeaderboardRow("", "", "", "", selectors.How2Score(0, 0, 0, 0)).as_json(),
        "coverage_percent",
        *selectors.GeneratorMetrics().as_json(),
        "p_holm_next",
        "separable_from_next",
    ]
    writer = SafeDictWriter(response, fieldnames=fields)
    writer.writeheader()
    pairs = paired.paired_tests(judge_ids or None, n_judgments=sum(row.score.total for row in rows))
    writer.writerows(paired.leaderboard_paired_json(rows, pairs))
    return response


# --- Two generators under one judge ---


def _compared(request: HttpRequest) -> tuple[Judge, Generator, Generator]:
    """The judge and generators ?judge=&a=&b= name (by judge_id / generator_id); 404 for an unknown one."""
    judge = get_object_or_404(Judge, judge_id=request.GET.get("judge", "").strip())
    a = get_object_or_404(Generator, generator_id=request.GET.get("a", "").strip())
    b = get_object_or_404(Generator, generator_id=request.GET.get("b", "").strip())
    return judge, a, b


@staff_required
@require_GET
def compare_generators(request: HttpRequest) -> HttpResponse:
    """Generator A vs B under one judge: their paired test and the discordant examples, 50 a page."""
    judge, a, b = _compared(request)
    result = compare.comparison(judge, a, b)
    page = Paginator(result.discordant, 50).get_page(request.GET.get("page"))
    procedures = Procedure.objects.select_related("topic").in_bulk([d.procedure_pk for d in page])
    context = {
        "comparison": result,
        "page": page,
        "rows": [(d, procedures[d.procedure_pk]) for d in page if d.procedure_pk in procedures],
        "query": query_string({"judge": judge.judge_id, "a": a.generator_id, "b": b.generator_id}),
        "n_a_only": sum(d.a_passes for d in result.discordant),
    }
    return render(request, "judging/compare.html", context)


@staff_required
@require_GET
def compare_example(request: HttpRequest, procedure_pk: int) -> HttpResponse:
    """One example: the reference (L1) and both L2s side by side, each with the judge's judgment."""
    judge, a, b = _compared(request)
    procedure = get_object_or_404(Procedure.objects.select_related("topic"), pk=procedure_pk)
    side_a, side_b = compare.side_by_side(judge, (a, b), procedure)
    context = {
        "judge": judge,
        "procedure": procedure,
        "sides": [side_a, side_b],
        "query": query_string({"judge": judge.judge_id, "a": a.generator_id, "b": b.generator_id}),
    }
    return render(request, "judging/compare_example.html", context)


# --- How2Score by topic (heatmap) ---


def _heatmap_judge(request: HttpRequest, judges: list[Judge]) -> Judge | None:
    """The judge asked for, else the one the leaderboard shows first (selectors.default_judge)."""
    wanted = request.GET.get("judge", "").strip()
    if wanted:
        return next((j for j in judges if j.judge_id == wanted), None)
    return selectors.default_judge(judges)


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
    judges = list(Judge.objects.by_model())
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
        "query": query_string(
            {"judge": judge.judge_id if judge else "", "score": "strict" if strict else ""}
        ),
    }
    template = "judging/heatmap.html#heatmap" if wants_fragment(request) else "judging/heatmap.html"
    return render(request, template, context)


@staff_required
@require_GET
def topic_heatmap_csv(request: HttpRequest) -> HttpResponse:
    judges = list(Judge.objects.by_model())
    judge = _heatmap_judge(request, judges)
    strict = request.GET.get("score") == "strict"
    grid = _heatmap_for(judge, strict)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="how2score_by_topic.csv"'
    writer = SafeDictWriter(response, fieldnames=charts.HEATMAP_CSV_FIELDS)
    writer.writeheader()
    writer.writerows(grid.csv_rows() if grid else [])
    return response


# --- Judges' rank correlations (cross-judge robustness) ---


@staff_required
@require_GET
def rank_correlation(request: HttpRequest) -> HttpResponse:
    """Kendall tau-b and Spearman rho between every two judges' rankings of the generators both judged."""
    strict = request.GET.get("score") == "strict"
    result = rankings.judge_rank_correlations(strict=strict)
    context = {"result": result, "matrix": result.matrix(), "strict": strict}
    return render(request, "judging/rank_correlation.html", context)


# --- Generator ---


@staff_required
@require_GET
def generator_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generator = get_object_or_404(Generator, pk=pk)
    judges = list(Judge.objects.filter(pk__in=_judge_pks_of(generator)).by_model())
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
        "can_run": can_run_jobs(request),
    }
    return render(request, "judging/generator.html", context)


def _judge_pks_of(generator: Generator) -> list[int]:
    return list(
        Judgment.objects.filter(generator=generator).order_by().values_list("judge_id", flat=True).distinct()
    )


def _verdicts_by_judge(generation: Generation, judges: list[Judge]) -> list[Judgment | None]:
    by_judge = {j.judge_id: j for j in generation.judgments.all()}
    return [by_judge.get(judge.pk) for judge in judges]


@staff_required
@require_http_methods(["GET", "POST"])
def generator_judge(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Judge these": one judge job over the generator's L2 that the chosen judge has not judged yet (from
    the generator page and a generate job's page); it goes to the job's page, which follows its progress."""
    generator = get_object_or_404(Generator, pk=pk)
    if not can_run_jobs(request):
        raise PermissionDenied("Judging needs the 'add job' permission.")
    form = JudgeWithForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        judge = form.cleaned_data["judge"]
        try:
            job = judge_job_create(judge=judge, generator=generator, created_by=request_user(request))
        except ValueError as refused:  # an imported judge, a changed prompt file, nothing left to judge
            form.add_error("judge", str(refused))
        else:
            messages.success(request, f"Job #{job.pk} started: {judge.model} judges {job.total} L2.")
            return redirect("jobs:job_detail", pk=job.pk)
    n_generations = Generation.objects.filter(generator=generator, error="").count()
    context = {"generator": generator, "form": form, "n_generations": n_generations}
    return render(request, "judging/generator_judge.html", context, status=400 if form.errors else 200)
