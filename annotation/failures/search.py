"""The failure browser's text search (the filter q).

On PostgreSQL q is a full-text query (websearch syntax, English stemming) answered by the GIN index on
to_tsvector('english', description) (judging migration 0003); elsewhere (SQLite) it falls back to a
case-insensitive substring match.

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

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

from judging.models import CriticalFailure

SEARCH_COUNT_CAP = 5_000  # judge failures a text search counts exactly (the package's docstring)


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
