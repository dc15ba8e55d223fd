"""Streaming readers: every file kind, compressed or not; bad lines are reported and reading goes on."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from mining.readers import ReadError, Record, iter_records

from .conftest import write_file

KINDS = [
    "jsonl", "json", "jsonl.gz", "jsonl.zst", "jsonl.bz2", "jsonl.xz", "csv", "csv.gz", "parquet", "arrow",
    "arrows",
]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_it_reads_every_file_kind(tmp_path: Path, kind: str, bench_records: list[dict[str, Any]]) -> None:
    items = list(iter_records(write_file(kind, tmp_path, bench_records)))
    assert all(isinstance(item, Record) for item in items)
    assert [item.data for item in items] == bench_records  # CSV list cells come back as lists
    first_line = 2 if kind.startswith("csv") else 1  # physical line (after a CSV header) or row number
    assert [item.line for item in items] == [first_line, first_line + 1, first_line + 2]


def test_it_reports_malformed_and_non_object_lines_and_skips_blank_ones(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": \n[1, 2]\n{"a": "é"}\n', encoding="utf-8")
    items = list(iter_records(path))
    assert items[0] == Record(1, {"a": 1})
    assert isinstance(items[1], ReadError) and items[1].line == 4 and "malformed JSON" in items[1].reason
    assert str(items[2]) == f"{path}:5: expected a JSON object, got list"
    assert items[3] == Record(6, {"a": "é"})


def test_it_reports_a_truncated_compressed_file_after_its_good_lines(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl.gz"
    data = gzip.compress(b'{"n": 1}\n' * 2000)
    path.write_bytes(data[: len(data) // 2])
    items = list(iter_records(path))
    assert isinstance(items[-1], ReadError)
    assert "cannot read or decompress the file" in items[-1].reason
    assert all(isinstance(item, Record) for item in items[:-1])


def test_it_reports_a_bad_csv_list_cell(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('source_example_id,goal,steps\nx,Do it.,"[""a"", "\n', encoding="utf-8")
    [item] = list(iter_records(path))
    assert isinstance(item, ReadError) and item.field == "steps"
    assert str(item) == f"{path}:2: steps: expected a JSON list in this CSV cell"


def test_it_reports_a_file_that_is_not_parquet(tmp_path: Path) -> None:
    path = tmp_path / "fake.parquet"
    path.write_text("not parquet", encoding="utf-8")
    [item] = list(iter_records(path))
    assert isinstance(item, ReadError) and "cannot read the parquet file" in item.reason


def test_it_reports_a_missing_file(tmp_path: Path) -> None:
    [item] = list(iter_records(tmp_path / "nope.jsonl"))
    assert isinstance(item, ReadError) and item.reason == "file not found"
