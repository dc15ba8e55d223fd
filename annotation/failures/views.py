"""Pages that read judge and human critical failures together (staff): the failure browser (every critical
failure, filtered, keyset-paged) and the generation page (L1 vs L2 with the judges' and the annotators'
failures, each linked to the steps it cites)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from annotation.base.failure_view import FailureView, step_links
from annotation.base.models import Annotation, Study
from annotation.failures import reads as failures
from annotation.failures.views_meaning import pattern_of
from h2e_site.web import HtmxHttpRequest, SafeDictWriter, query_string, staff_required, wants_fragment
from judging import charts
from judging.models import Generation, Generator, Judge, JudgeError, Judgment
from mining.models import Topic


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
    return FailureOptions(
        topics=list(Topic.objects.order_by("name").values_list("pk", "name")),
        generators=list(Generator.objects.by_model().values_list("pk", "generator_id", "model")),
        judges=list(Judge.objects.by_model().values_list("pk", "judge_id", "model")),
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
    choices = replace(options.choices(), patterns=failures.pattern_choices(query))
    filters = failures.failure_filters_resolve(query, choices)
    cursor = _cursor(request.GET.get("cursor"))
    page = failures.failure_page(filters=filters, cursor=cursor)
    counts = failures.failure_counts_by_topic(filters=filters)
    chart_items = [
        (
            c.topic,
            c.total,
            "?" + query_string(query.params(topic=c.topic)) if c.topic != failures.NO_TOPIC else "",
        )
        for c in counts
    ]
    context = {
        "filter_problems": query.problems(choices),
        "query": query,
        "options": options,
        "page": page,
        "cursor": cursor,
        "counts": counts,
        "total": sum(c.total for c in counts),
        "counts_at_least": filters.counts_at_least,
        "count_cap": failures.search.SEARCH_COUNT_CAP,
        "chart": _topic_chart(chart_items, at_least=filters.counts_at_least) if counts else None,
        "filter_query": query_string(query.params()),
        "next_query": query_string({**query.params(), "cursor": page.next_cursor})
        if page.next_cursor
        else "",
        "full_text": failures.is_full_text(),
        "pattern": pattern_of(filters.pattern),
        "without_pattern": query_string(query.params(pattern="")),
    }
    template = (
        "annotation/failures.html#failure-results" if wants_fragment(request) else "annotation/failures.html"
    )
    return render(request, template, context)


def _topic_chart(items: list[tuple[str, int, str]], *, at_least: bool) -> charts.BarChartSvg:
    if at_least:  # a broad text search: lower bounds (annotation/failures/search.py SEARCH_COUNT_CAP)
        title = "Critical failures per topic, at least"
        return charts.bar_chart_svg(items, title=title, unit="failures or more")
    return charts.bar_chart_svg(items, title="Critical failures per topic", unit="failures")


@staff_required
@require_GET
def failure_list_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every critical failure the browser's filters select, as CSV (cells a spreadsheet would run as formulas
    neutralised); a filter that names nothing is a 400 naming it, never an empty file."""
    query = failures.FailureQuery.from_params(request.GET)
    choices = replace(_failure_options().choices(), patterns=failures.pattern_choices(query))
    problems = query.problems(choices)
    if problems:
        return HttpResponseBadRequest("; ".join(f"{k}: {v}" for k, v in problems.items()))
    filters = failures.failure_filters_resolve(query, choices)
    response = StreamingHttpResponse(_csv_lines(filters), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="critical_failures.csv"'
    return response


def _csv_lines(filters: failures.FailureFilters) -> Iterator[str]:
    buffer = _LineBuffer()
    writer = SafeDictWriter(buffer, fieldnames=failures.CSV_FIELDS)
    writer.writeheader()
    yield buffer.take()
    for row in failures.failure_rows_all(filters=filters):
        writer.writerow(failures.failure_csv_row(row))
        yield buffer.take()


class _LineBuffer:
    """A file for csv.writer whose written text is taken line by line (streamed, never held whole)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def take(self) -> str:
        text, self.parts = "".join(self.parts), []
        return text


# --- Generation ---


@staff_required
@require_GET
def generation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generation = get_object_or_404(
        Generation.objects.select_related("generator", "procedure__topic").prefetch_related(
            Prefetch("judge_errors", queryset=JudgeError.objects.select_related("judge"))
        ),
        pk=pk,
    )
    l1_steps: list[Any] = list(generation.procedure.steps or [])
    l2_steps: list[Any] = list(generation.predicted_steps or [])
    judgments = Judgment.objects.filter(generation=generation).select_related("judge").with_failures()
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
    return render(request, "annotation/generation.html", context)


def _human_annotations(generation: Generation, n_l1: int, n_l2: int) -> list[tuple[Any, list[FailureView]]]:
    """The study annotations of this generation (attention checks left out), each with its failures."""
    annotations = (
        Annotation.objects.filter(item__generation=generation)
        .not_attention_checks()
        .select_related("study")
        .with_failures()
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
    return next(
        (v for _, views in groups for v in views if getattr(v.failure, "pk", None) == parsed[1]), None
    )
