"""The failure browser's pages: the rows of both sources in one stable order, cut by a keyset cursor.

Order: generation id descending, then source (judge before human), then the judgment / annotation id, then
the failure's order: judge and human failures on the same L1/L2 pair sit together. Pages are cut by a keyset
cursor (the last row's sort key), never OFFSET: each source is asked for the first `limit + 1` rows after the
cursor by walking an index, the two lists are merged in Python and cut again. Nothing counts the whole table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from annotation.base.models import AnnotatedFailure
from annotation.failures.filters import SOURCES, FailureFilters, Source
from annotation.failures.search import _among, _pks_among, _text_match
from judging.models import CriticalFailure, Generation, Judge

_SOURCE_RANK = {"judge": 0, "human": 1}
PAGE_SIZE = 50


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


def parse_token(token: str) -> tuple[Source, int] | None:
    """`judge-12` -> ("judge", 12); None for anything else."""
    source, _, pk = token.partition("-")
    if source in SOURCES and pk.isdigit() and len(pk) <= 18:
        return source, int(pk)  # type: ignore[return-value]
    return None
