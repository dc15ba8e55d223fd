"""`manage.py import_bench`: every record form and file kind, validation, idempotency, conflicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from mining.models import Procedure, Topic
from mining.services import bench_import

from .conftest import write_file, write_jsonl

pytestmark = pytest.mark.django_db


def _stored() -> list[tuple[Any, ...]]:
    return list(
        Procedure.objects.order_by("source_example_id").values_list(
            "source_example_id", "topic__name", "goal", "steps", "resources", "split", "url", "source_text"
        )
    )


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.zst", "jsonl.gz", "csv", "parquet", "arrow"])
def test_it_imports_every_file_kind(tmp_path: Path, kind: str, bench_records: list[dict[str, Any]]) -> None:
    call_command("import_bench", str(write_file(kind, tmp_path, bench_records)), verbosity=0)
    stored = _stored()
    assert [row[:5] for row in stored] == [
        (r["source_example_id"], r["topic"], r["goal"], r["steps"], r["resources"]) for r in bench_records
    ]
    assert {row[5] for row in stored} == {"bench"}


def test_it_creates_unknown_topics_outside_weborganizer(
    tmp_path: Path, bench_records: list[dict[str, Any]]
) -> None:
    call_command("import_bench", str(write_jsonl(tmp_path / "b.jsonl", bench_records)), verbosity=0)
    assert Topic.objects.get(name="Underwater Basket Weaving").is_weborganizer is False
    assert Topic.objects.get(name="Food & Dining").is_weborganizer is True


def test_it_reads_how2mine_exports_and_the_split_option(tmp_path: Path) -> None:
    record = {
        "source_example": {
            "id": "doc-9",
            "topic": "Health",
            "url": "https://example.org/x",
            "text": "Long text",
        },
        "final_procedure": {"goal": "Rest well.", "steps": ["Dim lights.", "Sleep."], "resources": ["bed"]},
    }
    path = write_jsonl(tmp_path / "mine.jsonl", [record])
    call_command("import_bench", str(path), "--split", "train", verbosity=0)
    assert _stored() == [
        (
            "doc-9",
            "Health",
            "Rest well.",
            ["Dim lights.", "Sleep."],
            ["bed"],
            "train",
            "https://example.org/x",
            "Long text",
        )
    ]


def test_it_is_idempotent(
    tmp_path: Path, bench_records: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", bench_records)
    call_command("import_bench", str(path), verbosity=0)
    first = _stored()
    call_command("import_bench", str(path), verbosity=0)
    assert _stored() == first
    assert f"{path}: 0 created, 3 already present" in capsys.readouterr().out


def test_it_reports_conflicts_without_overwriting(
    tmp_path: Path, bench_records: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("import_bench", str(write_jsonl(tmp_path / "a.jsonl", bench_records)), verbosity=0)
    before = _stored()
    changed = [{**bench_records[0], "goal": "Make tea instead."}, *bench_records[1:]]
    path = write_jsonl(tmp_path / "b.jsonl", changed)
    call_command("import_bench", str(path), verbosity=0)
    captured = capsys.readouterr()
    assert "1 conflict(s) with stored data, not overwritten" in captured.out
    assert f"{path}:1: source_example_id: 'b-001' is already stored with different content" in captured.err
    assert _stored() == before


BAD = [
    ({"source_example_id": "", "goal": "g", "steps": ["s"]}, "source_example_id: missing or empty"),
    ({"source_example_id": "x1", "steps": ["s"]}, "goal: missing or empty"),
    (
        {"source_example_id": "x2", "goal": "g", "steps": "s1. s2."},
        "steps: expected a list of strings, got str",
    ),
    ({"source_example_id": "x3", "goal": "g", "steps": []}, "steps: empty list"),
    ({"source_example_id": "x4", "goal": "g", "steps": ["ok", " "]}, "steps[1]: empty step"),
    ({"source_example_id": "x5", "goal": "g", "steps": ["ok", 3]}, "steps[1]: expected a string, got int"),
    (
        {"source_example_id": "x6", "goal": "g", "steps": ["s"], "resources": "pan"},
        "resources: expected a list",
    ),
    (
        {"source_example_id": "x7", "goal": "g", "steps": ["s"], "topic": 7},
        "topic: expected a string, got int",
    ),
]


def test_it_rejects_a_file_with_bad_records_and_names_every_line(
    tmp_path: Path, bench_records: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("import_bench", str(write_jsonl(tmp_path / "earlier.jsonl", bench_records[:1])), verbosity=0)
    before = _stored()
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(r) for r in bench_records[1:]] + [json.dumps(r) for r, _ in BAD] + ["{not json"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match="1 file\\(s\\) rejected with 9 bad record"):
        call_command("import_bench", str(path), verbosity=0)
    err = capsys.readouterr().err
    for i, (_, reason) in enumerate(BAD, start=3):
        assert f"{path}:{i}: {reason}" in err
    assert f"{path}:11: malformed JSON" in err
    assert _stored() == before  # neither the good records of the bad file nor anything else changed


def test_it_imports_the_rest_with_skip_invalid(
    tmp_path: Path, bench_records: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [*bench_records, BAD[1][0]])
    call_command("import_bench", str(path), "--skip-invalid", verbosity=0)
    captured = capsys.readouterr()
    assert f"{path}: 3 created, 0 already present, 1 bad record(s) skipped" in captured.out
    assert f"{path}:4: goal: missing or empty" in captured.err
    assert len(_stored()) == 3


def test_it_lists_at_most_fifty_bad_lines_then_a_count(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "many.jsonl", [{"source_example_id": f"x{i}", "steps": ["s"]} for i in range(60)]
    )
    report = bench_import(paths=[path])
    lines = report.error_lines()
    assert len(lines) == 51 and lines[-1] == "... and 10 more bad record(s)"


def test_it_keeps_good_files_when_another_is_rejected(
    tmp_path: Path, bench_records: list[dict[str, Any]]
) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", bench_records)
    bad = write_jsonl(tmp_path / "bad.jsonl", [BAD[0][0]])
    report = bench_import(paths=[good, bad])
    assert [f.imported for f in report.files] == [True, False]
    assert len(_stored()) == 3
