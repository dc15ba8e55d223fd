"""Bench records and writers for every file kind the readers accept."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
import zstandard

BENCH_RECORDS: list[dict[str, Any]] = [
    {
        "source_example_id": "b-001",
        "topic": "Food & Dining",
        "goal": "Make a café au lait.",
        "resources": ["coffee", "milk"],
        "steps": ["Brew the coffee.", "Heat the milk.", "Pour both together."],
    },
    {
        "source_example_id": "b-002",
        "topic": "Science, Math & Technology",
        "goal": "Boil H₂O at altitude 🏔.",
        "resources": [],
        "steps": ["Fill the pot.", "Heat until bubbling.", "Time it: 中文 ok."],
    },
    {
        "source_example_id": "b-003",
        "topic": "Underwater Basket Weaving",
        "goal": "Weave a small basket.",
        "resources": ["reeds"],
        "steps": ["Soak the reeds.", "Weave the base.", "Finish the rim."],
    },
]

Writer = Callable[[Path, list[dict[str, Any]]], Path]


def _jsonl_bytes(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _csv_bytes(records: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]))
    writer.writeheader()
    for r in records:
        writer.writerow(
            {k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for k, v in r.items()}
        )
    return out.getvalue().encode("utf-8")


def _table(records: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(records)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(_jsonl_bytes(records))
    return path


def write_file(kind: str, directory: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as one file kind: jsonl, json, jsonl.gz/.zst/.bz2/.xz, csv, csv.gz, parquet, arrow…"""
    path = directory / f"bench.{kind}"
    compressors = {
        "gz": gzip.compress,
        "zst": zstandard.ZstdCompressor().compress,
        "bz2": bz2.compress,
        "xz": lzma.compress,
    }
    base, _, compression = kind.partition(".")
    if base in {"jsonl", "json"}:
        data = _jsonl_bytes(records)
    elif base == "csv":
        data = _csv_bytes(records)
    elif base == "parquet":
        pq.write_table(_table(records), path, row_group_size=2)
        return path
    elif base == "arrow":
        feather.write_feather(_table(records), path, compression="uncompressed")
        return path
    elif base == "arrows":
        path = directory / "bench.arrow"
        with pa.OSFile(str(path), "wb") as sink, ipc.new_stream(sink, _table(records).schema) as writer:
            writer.write_table(_table(records))
        return path
    else:
        raise ValueError(kind)
    path.write_bytes(compressors[compression](data) if compression else data)
    return path


@pytest.fixture
def bench_records() -> list[dict[str, Any]]:
    return [dict(r) for r in BENCH_RECORDS]
