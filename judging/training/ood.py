"""Out-of-domain results imported from a file: one score per (benchmark, checkpoint) of a run.

The file is CSV (a header row naming the columns) or JSONL (one object a line), with the fields
- benchmark: its name (MMLU-Pro, GSM8K, ...), at most 100 characters;
- checkpoint: the checkpoint's step (a whole number) or its label, a checkpoint registered on the run;
- score: a finite number, on the benchmark's own scale;
- higher_is_better (optional): true/false (CSV also 1/0, yes/no); empty means true. One benchmark has one
  direction in a run.
All or nothing: any bad row refuses the whole file with every problem named by line and field (up to
MAX_PROBLEMS), and nothing is stored. A (benchmark, checkpoint) imported again takes the new score.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .checkpoint_models import BENCHMARK_MAX, Checkpoint, OODResult
from .models import TrainingRun

MAX_FILE_BYTES = 5_000_000
MAX_ROWS = 20_000
MAX_PROBLEMS = 20
REQUIRED = ("benchmark", "checkpoint", "score")
FIELDS = (*REQUIRED, "higher_is_better")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


@dataclass(frozen=True)
class Problem:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, {self.field}: {self.message}"


class OODFileRefused(ValueError):
    """A file refused as a whole: every problem found, by line and field."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        shown = "; ".join(str(p) for p in problems[:MAX_PROBLEMS])
        more = len(problems) - MAX_PROBLEMS
        super().__init__(f"{source}: {shown}" + (f"; and {more} more" if more > 0 else ""))
        self.problems = list(problems)


@dataclass(frozen=True)
class OODRow:
    line: int
    benchmark: str
    checkpoint: Checkpoint
    score: float
    higher_is_better: bool | None


@dataclass(frozen=True)
class OODImport:
    n_created: int
    n_updated: int
    benchmarks: list[str]


# --- reading records ---------------------------------------------------------------------------------------

Record = tuple[int, Mapping[str, Any]]  # (line, field -> value)


def _text(data: bytes, source: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise OODFileRefused(source, [Problem(1, "file", f"larger than {MAX_FILE_BYTES:,} bytes")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise OODFileRefused(source, [Problem(line, "file", "not UTF-8 text")]) from exc


def _is_jsonl(name: str, text: str) -> bool:
    lowered = name.lower()
    if lowered.endswith(".csv"):
        return False
    return lowered.endswith((".jsonl", ".ndjson", ".json")) or text.lstrip().startswith("{")


def _csv_records(text: str, problems: list[Problem]) -> Iterator[Record]:
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="\0extra")
    header = reader.fieldnames or []
    names = [name.strip() for name in header]
    for name in names:
        if name not in FIELDS:
            problems.append(
                Problem(1, name or "(empty column)", f"unknown column (known: {', '.join(FIELDS)})")
            )
    for name in REQUIRED:
        if name not in names:
            problems.append(Problem(1, name, "missing column"))
    if problems:
        return
    reader.fieldnames = names
    start = reader.line_num + 1
    for row in reader:
        if "\0extra" in row:
            problems.append(Problem(start, "(row)", f"more values than the header's {len(names)} columns"))
        else:
            yield start, {k: v for k, v in row.items() if v is not None}
        start = reader.line_num + 1


def _jsonl_records(text: str, problems: list[Problem]) -> Iterator[Record]:
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(line, "(line)", f"not JSON: {exc.msg}"))
            continue
        if not isinstance(record, dict):
            problems.append(Problem(line, "(line)", "must be a JSON object"))
            continue
        unknown = sorted(set(record) - set(FIELDS))
        if unknown:
            problems.append(Problem(line, unknown[0], f"unknown field (known: {', '.join(FIELDS)})"))
            continue
        yield line, record


# --- checking fields ---------------------------------------------------------------------------------------


class _Bad(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _benchmark(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad("benchmark", "must be a non-empty name")
    name = value.strip()
    if len(name) > BENCHMARK_MAX:
        raise _Bad("benchmark", f"at most {BENCHMARK_MAX} characters")
    return name


def _score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _Bad("score", f"must be a number, got {json.dumps(value)[:40]}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise _Bad("score", f"must be a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise _Bad("score", f"must be a finite number, got {str(value)[:40]!r}")
    return number


def _direction(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if not lowered:
            return None
        if lowered in _TRUE | _FALSE:
            return lowered in _TRUE
    raise _Bad("higher_is_better", f"must be true or false, got {str(value)[:40]!r}")


class _Checkpoints:
    """A run's checkpoints by step and by label."""

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.all = list(run.checkpoints.order_by("step"))
        self.by_step = {c.step: c for c in self.all}
        self.by_label = {c.label: c for c in self.all if c.label}

    def find(self, value: Any) -> Checkpoint:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise _Bad("checkpoint", f"must be a step or a label, got {json.dumps(value)[:40]}")
        text = str(value).strip()
        found = self.by_step.get(int(text)) if text.isascii() and text.isdigit() else self.by_label.get(text)
        if found is None:
            known = ", ".join(c.name for c in self.all) or "none registered yet"
            raise _Bad("checkpoint", f"no checkpoint of run {self.run.name!r} is {text[:60]!r} ({known})")
        return found


def _row(line: int, record: Mapping[str, Any], checkpoints: _Checkpoints) -> OODRow:
    for name in REQUIRED:
        if record.get(name) is None or record.get(name) == "":
            raise _Bad(name, "missing")
    return OODRow(
        line=line,
        benchmark=_benchmark(record["benchmark"]),
        checkpoint=checkpoints.find(record["checkpoint"]),
        score=_score(record["score"]),
        higher_is_better=_direction(record.get("higher_is_better")),
    )


def ood_rows_parse(data: bytes, *, name: str, run: TrainingRun) -> list[OODRow]:
    """The file's rows, checked against the run's checkpoints and stored directions; OODFileRefused naming
    every problem by line and field."""
    text = _text(data, name)
    problems: list[Problem] = []
    records = _jsonl_records(text, problems) if _is_jsonl(name, text) else _csv_records(text, problems)
    checkpoints = _Checkpoints(run)
    rows: list[OODRow] = []
    for line, record in records:
        if len(rows) >= MAX_ROWS:
            problems.append(Problem(line, "(row)", f"more than {MAX_ROWS:,} rows"))
            break
        try:
            rows.append(_row(line, record, checkpoints))
        except _Bad as bad:
            problems.append(Problem(line, bad.field, str(bad)))
    if not rows and not problems:
        problems.append(Problem(1, "file", "no rows"))
    problems += _clashes(rows, run)
    if problems:
        raise OODFileRefused(name, sorted(problems, key=lambda p: p.line))
    return rows


def _clashes(rows: Sequence[OODRow], run: TrainingRun) -> list[Problem]:
    """A (benchmark, checkpoint) given twice, and a benchmark given both directions (in the file, or against
    the run's stored rows the file does not replace)."""
    problems = []
    seen: dict[tuple[str, int], int] = {}
    direction: dict[str, tuple[bool, int]] = {}
    replaced = {(row.benchmark, row.checkpoint.pk) for row in rows}
    for stored in OODResult.objects.filter(checkpoint__run=run).values_list(
        "benchmark", "checkpoint_id", "higher_is_better"
    ):
        if (stored[0], stored[1]) not in replaced:
            direction.setdefault(stored[0], (stored[2] is not False, 0))
    for row in rows:
        key = (row.benchmark, row.checkpoint.pk)
        if key in seen:
            problems.append(
                Problem(
                    row.line, "checkpoint", f"{row.benchmark} of this checkpoint again (line {seen[key]})"
                )
            )
            continue
        seen[key] = row.line
        higher = row.higher_is_better is not False
        earlier = direction.setdefault(row.benchmark, (higher, row.line))
        if earlier[0] != higher:
            where = f"line {earlier[1]}" if earlier[1] else "the results already stored"
            problems.append(
                Problem(row.line, "higher_is_better", f"{row.benchmark} is {_said(earlier[0])} in {where}")
            )
    return problems


def _said(higher: bool) -> str:
    return "higher is better" if higher else "lower is better"


# --- storing ----------------------------------------------------------------------------------------------


def ood_import(*, run: TrainingRun, data: bytes, name: str) -> OODImport:
    """Store the file's OOD results for `run` (all or nothing; see the module doc)."""
    rows = ood_rows_parse(data, name=name, run=run)
    keys = {(row.checkpoint.pk, row.benchmark) for row in rows}
    with transaction.atomic():
        stored = set(OODResult.objects.filter(checkpoint__run=run).values_list("checkpoint_id", "benchmark"))
        OODResult.objects.bulk_create(
            [
                OODResult(
                    checkpoint=row.checkpoint,
                    benchmark=row.benchmark,
                    score=row.score,
                    higher_is_better=row.higher_is_better,
                    source=name[:255],
                )
                for row in rows
            ],
            update_conflicts=True,
            unique_fields=["checkpoint", "benchmark"],
            update_fields=["score", "higher_is_better", "source", "updated_at"],
        )
    n_updated = len(keys & stored)
    return OODImport(len(keys) - n_updated, n_updated, sorted({row.benchmark for row in rows}))
