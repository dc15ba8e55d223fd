"""The failure browser's CSV: every failure the filters select, in the browser's order, one row each with the
API's fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotation.failures.filters import FailureFilters
from annotation.failures.paging import Cursor, FailureRow, failure_page


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
