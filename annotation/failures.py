"""The failure browser's reads: every critical failure, from judges (CriticalFailure via Judgment) and from
humans (AnnotatedFailure via Annotation -> StudyItem -> Generation), in one stable order.

Order: generation id descending, then source (judge before human), then the judgment / annotation id, then
the failure's order: judge and human failures on the same L1/L2 pair sit together. Pages are cut by a keyset
cursor (the last row's sort key), never OFFSET: each source is asked for the first `limit + 1` rows after the
cursor by walking an index, the two lists are merged in Python and cut again. Nothing counts the whole table.

Filters: topic (name), generator (generator_id), judge (judge_id; only judge failures), study (slug; only
human failures), source ("judge" / "human"; absent = both), q (text), pattern (a FailurePattern's id:
the failures of one cluster of a topic's failure patterns, annotation/failure_meaning/). On PostgreSQL q is
a full-text query (websearch syntax, English stemming) answered by the GIN index on
to_tsvector('english', description) (judging migration 0003); elsewhere (SQLite) it falls back to a
case-insensitive substring match.

Counts per topic follow the same filters. Without q the judge side sums Judgment.n_failures (one
index-only scan; n_failures is the number of CriticalFailure rows the judgment has). Attention-check items of
studies are left out: their "failures" are instructed, not found.

A text search on PostgreSQL first asks the GIN index alone (one table, no order) for the judge failures that
match, at most SEARCH_COUNT_CAP + 1 of them (FailureFilters.text_hits). When they are all there (a word not
very common), the page and the counts are read among those ids: exact counts, and no walk of the ordered
index that would compute to_tsvector row after row looking for a word that is rare or absent (14 s at
628,000 failures). When there are more (a common word), the page walks the ordered index (a match is met
every few rows) and the counts per topic are those among the SEARCH_COUNT_CAP + 1 matches found: lower
bounds, flagged `at_least` and shown as "N+", since counting every match of a common word joins every one of
them to its judgment (0.4-3 s at 628,000 failures).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import connection
from django.db.models import BooleanField, Count, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL

from judging.models import CriticalFailure, Generation, Generator, Judge, Judgment
from mining.models import Topic

from .failure_meaning.models import FailurePattern
from .models import AnnotatedFailure, Study

Source = Literal["judge", "human"]
SOURCES: tuple[Source, ...] = ("judge", "human")
_SOURCE_RANK = {"judge": 0, "human": 1}
PAGE_SIZE = 50
SEARCH_COUNT_CAP = 5_000  # judge failures a text search counts exactly (see the module's docstring)
NO_TOPIC = "(no topic)"


# --- filters ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureFilters:
    """Resolved filters (row ids); `nothing` when a given name matched no row, so no failure can match."""

    topic: int | None = None
    generator: int | None = None
    judge: int | None = None
    study: int | None = None
    source: Source | None = None
    q: str = ""
    pattern: int | None = None
    # the pattern's members: (CriticalFailure ids, AnnotatedFailure ids)
    pattern_members: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    nothing: bool = False
    # PostgreSQL with q: (id, judgment id) of the judge failures matching q under no other filter, all of
    # them or (a common word) the first SEARCH_COUNT_CAP + 1 the index gave; None otherwise.
    text_hits: tuple[tuple[int, int], ...] | None = None

    @property
    def search_is_broad(self) -> bool:
        """More judge failures match q than SEARCH_COUNT_CAP: the judge counts are lower bounds."""
        return self.text_hits is not None and len(self.text_hits) > SEARCH_COUNT_CAP

    @property
    def counts_at_least(self) -> bool:
        """The judge counts are lower bounds: a broad search not within a pattern's members (those are
        counted exactly)."""
        return self.search_is_broad and self.pattern_members is None

    @property
    def sources(self) -> tuple[Source, ...]:
        if self.nothing:
            return ()
        wanted = [s for s in SOURCES if self.source in (None, s)]
        if self.judge is not None:  # a judge's failures only
            wanted = [s for s in wanted if s == "judge"]
        if self.study is not None:  # a study's human failures only
            wanted = [s for s in wanted if s == "human"]
        return tuple(wanted)


@dataclass(frozen=True)
class FailureQuery:
    """The filters as given (names), echoed back in links and forms."""

    topic: str = ""
    generator: str = ""
    judge: str = ""
    study: str = ""
    source: str = ""
    q: str = ""
    pattern: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FailureQuery:
        def get(name: str) -> str:  # NUL can't go into a PostgreSQL query: drop it
            return str(params.get(name) or "").replace("\x00", "").strip()[:200]

        return cls(
            topic=get("topic"),
            generator=get("generator"),
            judge=get("judge"),
            study=get("study"),
            source=get("source"),
            q=get("q"),
            pattern=get("pattern"),
        )

    def problems(self, choices: FilterChoices) -> dict[str, str]:
        """Each filter whose value names nothing (field -> message): an unknown source, or a topic,
        generator, judge or study that does not exist. Answered with a 400 by the API, shown on the page."""
        found: dict[str, str] = {}
        if self.source and self.source not in SOURCES:
            found["source"] = f"{self.source!r} is not a source: judge or human"
        for name, table, what in (
            ("topic", choices.topics, "topic"),
            ("generator", choices.generators, "generator with this generator_id"),
            ("judge", choices.judges, "judge with this judge_id"),
            ("study", choices.studies, "study with this slug"),
            ("pattern", choices.patterns, "failure pattern with this id"),
        ):
            value = getattr(self, name)
            if value and value not in table:
                found[name] = f"no {what}: {value!r}"
        return found

    def params(self, **changes: str) -> dict[str, str]:
        """The non-empty filters, with changes applied (for links that keep the other filters)."""
        values = {
            "topic": self.topic,
            "generator": self.generator,
            "judge": self.judge,
            "study": self.study,
            "source": self.source,
            "q": self.q,
            "pattern": self.pattern,
        }
        values.update(changes)
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class FilterChoices:
    """The rows the filters pick from: name -> id, loaded once (the page's dropdowns use them too)."""

    topics: dict[str, int] = field(default_factory=dict)
    generators: dict[str, int] = field(default_factory=dict)
    judges: dict[str, int] = field(default_factory=dict)
    studies: dict[str, int] = field(default_factory=dict)
    patterns: dict[str, int] = field(default_factory=dict)


def pattern_choices(query: FailureQuery) -> dict[str, int]:
    """{pattern: its id} when the query names a failure pattern that exists, else {} (one small query)."""
    if not query.pattern.isdigit() or len(query.pattern) > 18:
        return {}
    found = FailurePattern.objects.filter(pk=int(query.pattern)).values_list("pk", flat=True).first()
    return {} if found is None else {query.pattern: found}


def filter_choices_for(query: FailureQuery) -> FilterChoices:
    """Only the rows named by the query (at most one small query per given filter)."""
    return FilterChoices(
        topics=dict(Topic.objects.filter(name=query.topic).values_list("name", "pk")) if query.topic else {},
        generators=dict(
            Generator.objects.filter(generator_id=query.generator).values_list("generator_id", "pk")
        )
        if query.generator
        else {},
        judges=dict(Judge.objects.filter(judge_id=query.judge).values_list("judge_id", "pk"))
        if query.judge
        else {},
        studies=dict(Study.objects.filter(slug=query.study).values_list("slug", "pk")) if query.study else {},
        patterns=pattern_choices(query),
    )


def failure_filters_resolve(query: FailureQuery, choices: FilterChoices) -> FailureFilters:
    """Names to ids; a name that is not found makes the result empty rather than silently unfiltered."""
    resolved: dict[str, int | None] = {}
    nothing = False
    for name, table in (
        ("topic", choices.topics),
        ("generator", choices.generators),
        ("judge", choices.judges),
        ("study", choices.studies),
        ("pattern", choices.patterns),
    ):
        value = getattr(query, name)
        resolved[name] = table.get(value) if value else None
        nothing = nothing or bool(value and resolved[name] is None)
    nothing = nothing or bool(query.source and query.source not in SOURCES)
    return FailureFilters(
        topic=resolved["topic"],
        generator=resolved["generator"],
        judge=resolved["judge"],
        study=resolved["study"],
        source=query.source if query.source in SOURCES else None,  # type: ignore[arg-type]
        q=query.q,
        pattern=resolved["pattern"],
        pattern_members=_pattern_members(resolved["pattern"]),
        nothing=nothing,
        text_hits=_text_hits(query.q) if query.q and is_full_text() and not nothing else None,
    )


def _pattern_members(pk: int | None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    if pk is None:
        return None
    judge, human = FailurePattern.objects.values_list("judge_members", "human_members").get(pk=pk)
    return tuple(judge), tuple(human)


# --- cursor -----------------------------------------------------------------------------------------------

_CURSOR = re.compile(r"^(\d{1,18})\.([jh])\.(\d{1,18})\.(\d{1,9})$")


@dataclass(frozen=True)
class Cursor:
    """The sort key of the last row shown: (generation id, source, judgment/annotation id, failure order)."""

    generation_id: int
    source: Source
    parent_id: int
    order: int

    def sort_key(self) -> tuple[int, int, int, int]:
        return (-self.generation_id, _SOURCE_RANK[self.source], self.parent_id, self.order)

    def encode(self) -> str:
        return f"{self.generation_id}.{self.source[0]}.{self.parent_id}.{self.order}"

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """Raises ValueError for anything but a token made by encode()."""
        match = _CURSOR.match(token.strip())
        if not match:
            raise ValueError(f"not a failure cursor: {token[:40]!r}")
        g, s, p, o = match.groups()
        return cls(int(g), "judge" if s == "j" else "human", int(p), int(o))


# --- rows -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureRow:
    source: Source
    pk: int
    generation_id: int
    parent_id: int  # the judgment (judge) or annotation (human) the failure belongs to
    order: int
    description: str
    l1_steps: Any
    l2_steps: Any
    topic: str = ""
    generator_id: str = ""
    generator_model: str = ""
    goal: str = ""
    source_example_id: str = ""
    judge_id: str = ""  # judge failures
    judge_model: str = ""
    study_slug: str = ""  # human failures

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.generation_id, self.source, self.parent_id, self.order)

    @property
    def token(self) -> str:
        """`judge-12` / `human-7`: the generation page's ?failure= value."""
        return f"{self.source}-{self.pk}"

    @property
    def l1_label(self) -> str:
        return _steps_label(self.l1_steps)

    @property
    def l2_label(self) -> str:
        return _steps_label(self.l2_steps)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.token,
            "source": self.source,
            "generation": self.generation_id,
            "judgment": self.parent_id if self.source == "judge" else None,
            "annotation": self.parent_id if self.source == "human" else None,
            "order": self.order,
            "description": self.description,
            "L1_steps": self.l1_steps,
            "L2_steps": self.l2_steps,
            "topic": self.topic or None,
            "generator_id": self.generator_id,
            "generator_model": self.generator_model,
            "source_example_id": self.source_example_id,
            "goal": self.goal,
            "judge_id": self.judge_id or None,
            "judge_model": self.judge_model or None,
            "study": self.study_slug or None,
        }


def _steps_label(values: Any) -> str:
    return ", ".join(str(v) for v in values) if isinstance(values, list) else str(values)


@dataclass(frozen=True)
class FailurePage:
    rows: list[FailureRow]
    next_cursor: str | None  # None on the last page


# --- text search ------------------------------------------------------------------------------------------


def is_full_text() -> bool:
    return connection.vendor == "postgresql"


def _text_hits(q: str) -> tuple[tuple[int, int], ...]:
    """(id, judgment id) of the judge failures matching q, at most SEARCH_COUNT_CAP + 1, from the GIN index
    (one table and no order: the planner has no walk to choose)."""
    matching = _text_match(CriticalFailure.objects.order_by(), CriticalFailure._meta.db_table, q)
    return tuple(matching.values_list("pk", "judgment_id")[: SEARCH_COUNT_CAP + 1])


def _among(table: str, ids: Iterable[int]) -> RawSQL:
    """`table.id = ANY(ids)` as one array parameter (an IN list of thousands of parameters plans slowly)."""
    return RawSQL(f"{table}.id = ANY(%s)", [sorted(set(ids))], output_field=BooleanField())


def _pks_among(queryset: QuerySet[Any], table: str, ids: Iterable[int]) -> QuerySet[Any]:
    """Rows whose id is one of `ids` (a pattern's members: thousands): one array parameter on PostgreSQL."""
    if is_full_text():
        return queryset.filter(_among(table, ids))
    return queryset.filter(pk__in=sorted(set(ids)))


def _text_match(queryset: QuerySet[Any], table: str, q: str) -> QuerySet[Any]:
    if not q:
        return queryset
    if is_full_text():
        # The same expression as the GIN index of migration 0003, so the planner can use it.
        match = RawSQL(
            f"to_tsvector('english'::regconfig, {table}.description) "
            "@@ websearch_to_tsquery('english'::regconfig, %s)",
            [q],
            output_field=BooleanField(),
        )
        return queryset.filter(match)
    return queryset.filter(description__icontains=q)


# --- the two sources --------------------------------------------------------------------------------------


def _judge_failures(filters: FailureFilters) -> QuerySet[CriticalFailure]:
    """The judge failures the filters select (a search not broad: among its text_hits)."""
    qs = CriticalFailure.objects.filter(judgment__n_failures__gt=0)
    if filters.topic is not None:
        qs = qs.filter(judgment__topic_id=filters.topic)
    if filters.generator is not None:
        qs = qs.filter(judgment__generator_id=filters.generator)
    if filters.judge is not None:
        qs = qs.filter(judgment__judge_id=filters.judge)
    table = CriticalFailure._meta.db_table
    if filters.pattern_members is not None:
        qs = _pks_among(qs, table, filters.pattern_members[0])
    if filters.text_hits is not None and not filters.search_is_broad:
        return qs.filter(_among(table, (pk for pk, _ in filters.text_hits)))
    return _text_match(qs, table, filters.q)


def _human_failures(filters: FailureFilters) -> QuerySet[AnnotatedFailure]:
    qs: QuerySet[AnnotatedFailure] = AnnotatedFailure.objects.not_attention_checks()
    if filters.topic is not None:
        qs = qs.filter(annotation__item__generation__procedure__topic_id=filters.topic)
    if filters.generator is not None:
        qs = qs.filter(annotation__item__generation__generator_id=filters.generator)
    if filters.study is not None:
        qs = qs.filter(annotation__study_id=filters.study)
    if filters.pattern_members is not None:
        qs = _pks_among(qs, AnnotatedFailure._meta.db_table, filters.pattern_members[1])
    return _text_match(qs, AnnotatedFailure._meta.db_table, filters.q)


def _after(cursor: Cursor | None, source: Source, generation: str, parent: str) -> Q:
    """Rows of `source` that sort after the cursor (generation desc, source, parent asc, order asc).

    The plain `generation <= g` term is redundant with the OR but lets the index scan start at the cursor.
    """
    if cursor is None:
        return Q()
    g = cursor.generation_id
    starts = Q(**{f"{generation}__lte": g})
    if _SOURCE_RANK[source] < _SOURCE_RANK[cursor.source]:
        return starts & Q(**{f"{generation}__lt": g})
    if _SOURCE_RANK[source] > _SOURCE_RANK[cursor.source]:
        return starts
    p, o = cursor.parent_id, cursor.order
    return starts & (
        Q(**{f"{generation}__lt": g})
        | Q(**{generation: g, f"{parent}__gt": p})
        | Q(**{generation: g, parent: p, "order__gt": o})
    )


def _judge_rows(filters: FailureFilters, cursor: Cursor | None, limit: int) -> list[FailureRow]:
    qs = (
        _judge_failures(filters)
        .filter(_after(cursor, "judge", "judgment__generation_id", "judgment_id"))
        .order_by("-judgment__generation_id", "judgment_id", "order")
        .values_list(
            "pk", "judgment__generation_id", "judgment_id", "order", "description", "l1_steps", "l2_steps",
            "judgment__judge_id",
        )[:limit]
    )  # fmt: skip
    judges = {}
    rows = []
    for pk, generation, parent, order, description, l1, l2, judge in qs:
        judges[pk] = judge
        rows.append(FailureRow("judge", pk, generation, parent, order, description, l1, l2))
    return _with_judges(rows, judges)


def _with_judges(rows: list[FailureRow], judge_of: dict[int, int]) -> list[FailureRow]:
    if not rows:
        return rows
    judges = {
        pk: (judge_id, model)
        for pk, judge_id, model in Judge.objects.filter(pk__in=set(judge_of.values())).values_list(
            "pk", "judge_id", "model"
        )
    }
    return [
        _replace(row, judge_id=judges[judge_of[row.pk]][0], judge_model=judges[judge_of[row.pk]][1])
        for row in rows
    ]


def _human_rows(filters: FailureFilters, cursor: Cursor | None, limit: int) -> list[FailureRow]:
    generation = "annotation__item__generation_id"
    qs = (
        _human_failures(filters)
        .filter(_after(cursor, "human", generation, "annotation_id"))
        .order_by(f"-{generation}", "annotation_id", "order")
        .values_list(
            "pk", generation, "annotation_id", "order", "description", "l1_steps", "l2_steps",
            "annotation__study__slug",
        )[:limit]
    )  # fmt: skip
    return [
        FailureRow("human", pk, g, parent, order, description, l1, l2, study_slug=slug)
        for pk, g, parent, order, description, l1, l2, slug in qs
    ]


def _replace(row: FailureRow, **changes: Any) -> FailureRow:
    from dataclasses import replace

    return replace(row, **changes)


def _with_generations(rows: list[FailureRow]) -> list[FailureRow]:
    """Goal, topic and generator of each row's generation (one query for the page)."""
    if not rows:
        return rows
    info = {
        pk: (goal, example, topic or "", generator_id, model)
        for pk, goal, example, topic, generator_id, model in Generation.objects.filter(
            pk__in={r.generation_id for r in rows}
        ).values_list(
            "pk",
            "procedure__goal",
            "procedure__source_example_id",
            "procedure__topic__name",
            "generator__generator_id",
            "generator__model",
        )
    }
    return [
        _replace(
            row,
            goal=info[row.generation_id][0],
            source_example_id=info[row.generation_id][1],
            topic=info[row.generation_id][2],
            generator_id=info[row.generation_id][3],
            generator_model=info[row.generation_id][4],
        )
        for row in rows
    ]


def failure_page(
    *, filters: FailureFilters, cursor: Cursor | None = None, page_size: int = PAGE_SIZE
) -> FailurePage:
    """One page of failures after the cursor: at most 2 + 1 + 1 queries (judge rows, their judges, human
    rows, the page's generations), whatever the table size."""
    rows: list[FailureRow] = []
    sources = filters.sources
    if "judge" in sources:
        rows += _judge_rows(filters, cursor, page_size + 1)
    if "human" in sources:
        rows += _human_rows(filters, cursor, page_size + 1)
    rows.sort(key=lambda r: r.cursor.sort_key())
    has_next = len(rows) > page_size
    rows = rows[:page_size]
    next_cursor = rows[-1].cursor.encode() if has_next and rows else None
    return FailurePage(rows=_with_generations(rows), next_cursor=next_cursor)


def failure_rows_all(*, filters: FailureFilters, page_size: int = 1000) -> Iterator[FailureRow]:
    """Every failure the filters select, in the browser's order, read a keyset page at a time (the CSV)."""
    cursor: Cursor | None = None
    while True:
        page = failure_page(filters=filters, cursor=cursor, page_size=page_size)
        yield from page.rows
        if page.next_cursor is None:
            return
        cursor = Cursor.decode(page.next_cursor)


CSV_FIELDS = [
    "id",
    "source",
    "topic",
    "generator_id",
    "generator_model",
    "judge_id",
    "judge_model",
    "study",
    "source_example_id",
    "goal",
    "generation",
    "order",
    "description",
    "L1_steps",
    "L2_steps",
]


def failure_csv_row(row: FailureRow) -> dict[str, Any]:
    """One CSV row: the API's fields, step lists as "1, 3"."""
    values = row.as_json()
    values["L1_steps"], values["L2_steps"] = row.l1_label, row.l2_label
    return {name: values[name] for name in CSV_FIELDS}


# --- counts per topic -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicCount:
    topic: str
    judge: int
    human: int
    at_least: bool = False  # a broad text search: the judge count is a lower bound (SEARCH_COUNT_CAP)

    @property
    def total(self) -> int:
        return self.judge + self.human


def failure_counts_by_topic(*, filters: FailureFilters) -> list[TopicCount]:
    """Failures per topic under the filters, most first (two grouped queries plus one for topic names)."""
    judge: dict[int | None, int] = {}
    human: dict[int | None, int] = {}
    sources = filters.sources
    if "judge" in sources:
        judge = _judge_counts(filters)
    if "human" in sources:
        grouped = (
            _human_failures(filters)
            .order_by()
            .values_list("annotation__item__generation__procedure__topic_id")
            .annotate(n=Count("id"))
        )
        human = {topic: n for topic, n in grouped}
    keys = set(judge) | set(human)
    names = dict(Topic.objects.filter(pk__in=[k for k in keys if k is not None]).values_list("pk", "name"))
    at_least = filters.counts_at_least and "judge" in sources
    counts = [
        TopicCount(names.get(k, NO_TOPIC) if k else NO_TOPIC, judge.get(k, 0), human.get(k, 0), at_least)
        for k in keys
    ]
    counts = [c for c in counts if c.total]
    counts.sort(key=lambda c: (-c.total, c.topic))
    return counts


def _judge_counts(filters: FailureFilters) -> dict[int | None, int]:
    qs = Judgment.objects.filter(n_failures__gt=0)
    if filters.topic is not None:
        qs = qs.filter(topic_id=filters.topic)
    if filters.generator is not None:
        qs = qs.filter(generator_id=filters.generator)
    if filters.judge is not None:
        qs = qs.filter(judge_id=filters.judge)
    if filters.pattern_members is not None or (filters.q and filters.text_hits is None):
        # a pattern's members (text hits among them), or SQLite's substring match: count the failures
        grouped = (
            _judge_failures(filters).order_by().values_list("judgment__topic_id").annotate(n=Count("id"))
        )
        return {topic: n for topic, n in grouped}
    if filters.text_hits is not None:  # the hits' judgments under the filters, each counted once a hit
        per_judgment = Counter(judgment for _, judgment in filters.text_hits)
        counts: Counter[int | None] = Counter()
        for judgment, topic in qs.filter(_among(Judgment._meta.db_table, per_judgment)).values_list(
            "pk", "topic_id"
        ):
            counts[topic] += per_judgment[judgment]
        return dict(counts)
    return {
        topic: int(n or 0) for topic, n in qs.order_by().values_list("topic_id").annotate(n=Sum("n_failures"))
    }


def parse_token(token: str) -> tuple[Source, int] | None:
    """`judge-12` -> ("judge", 12); None for anything else."""
    source, _, pk = token.partition("-")
    if source in SOURCES and pk.isdigit() and len(pk) <= 18:
        return source, int(pk)  # type: ignore[return-value]
    return None


__all__ = [
    "CSV_FIELDS",
    "Cursor",
    "FailureFilters",
    "FailurePage",
    "FailureQuery",
    "FailureRow",
    "FilterChoices",
    "TopicCount",
    "failure_counts_by_topic",
    "failure_csv_row",
    "failure_filters_resolve",
    "failure_page",
    "failure_rows_all",
    "filter_choices_for",
    "is_full_text",
    "parse_token",
    "pattern_choices",
]
