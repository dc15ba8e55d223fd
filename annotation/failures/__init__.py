"""The failure browser's reads: every critical failure, from judges (CriticalFailure via Judgment) and from
humans (AnnotatedFailure via Annotation -> StudyItem -> Generation), in one stable order. Attention-check
items of studies are left out: their "failures" are instructed, not found.

- filters.py: the filters, as given (FailureQuery, names) and resolved (FailureFilters, row ids);
- search.py: the text search (q): full text on PostgreSQL, its matches asked of the GIN index first;
- paging.py: the order, the keyset cursor, the rows and one page of them (failure_page), parse_token;
- exports.py: the CSV (every failure the filters select, a keyset page at a time);
- counts.py: the failures per topic under the same filters.

Callers use the package (`from annotation import failures`, then `failures.failure_page(...)`), not its
modules.
"""

from __future__ import annotations

from annotation.failures import search
from annotation.failures.counts import NO_TOPIC, TopicCount, failure_counts_by_topic
from annotation.failures.exports import CSV_FIELDS, failure_csv_row, failure_rows_all
from annotation.failures.filters import (
    FailureFilters,
    FailureQuery,
    FilterChoices,
    failure_filters_resolve,
    filter_choices_for,
    pattern_choices,
)
from annotation.failures.paging import Cursor, FailurePage, FailureRow, failure_page, parse_token
from annotation.failures.paging import (
    _judge_failures as _judge_failures,  # benchmarks/researcher_pages.py EXPLAINs its query
)
from annotation.failures.search import is_full_text

__all__ = [
    "CSV_FIELDS",
    "NO_TOPIC",
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
    "search",
]
