"""The failure browser's reads, in one place for its callers (the pages, the API, the CSV): filters, search,
paging, exports and counts (each module's docstring says what it does; the package's, the whole)."""

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
