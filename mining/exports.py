"""Writing procedures in the files the h2e CLI reads (h2e-compat.md "Bench inputs", "Mining rules").

- bench: one `{source_example_id, topic, goal, resources, steps}` per line, the How2Bench dataset's columns.
- how2mine: the same flat fields plus the nested How2Mine export form, `final_procedure` {goal, steps,
  resources} and `source_example` {id, topic, url, text}; `import_bench` reads both back unchanged.

Lines are `json.dumps(..., ensure_ascii=False)`; a path ending in .gz or .zst is compressed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from .models import Procedure

ExportForm = Literal["bench", "how2mine"]
EXPORT_FORMS: tuple[str, ...] = ("bench", "how2mine")


def procedure_record(procedure: Procedure, *, form: ExportForm) -> dict[str, Any]:
    topic = procedure.topic.name if procedure.topic else ""
    record: dict[str, Any] = {
        "source_example_id": procedure.source_example_id,
        "topic": topic,
        "goal": procedure.goal,
        "resources": procedure.resources,
        "steps": procedure.steps,
    }
    if form == "how2mine":
        record["final_procedure"] = {
            "goal": procedure.goal,
            "steps": procedure.steps,
            "resources": procedure.resources,
        }
        record["source_example"] = {
            "id": procedure.source_example_id,
            "topic": topic,
            "url": procedure.url,
            "text": procedure.source_text,
        }
    return record


def procedures_export(
    *, path: Path, form: ExportForm = "bench", split: str | None = None, run_id: int | None = None
) -> int:
    """Write the procedures of `split` (all when None) and/or those mining run `run_id` kept (its final
    passes, including those an earlier run had stored with the same content); the number written."""
    if form not in EXPORT_FORMS:
        raise ValueError(f"unknown export form {form!r}: expected bench or how2mine")
    procedures = Procedure.objects.select_related("topic").order_by("source_example_id")
    if split:
        procedures = procedures.filter(split=split)
    if run_id is not None:
        procedures = procedures.filter(mining_runs=run_id)
    if form == "bench":
        procedures = procedures.defer("source_text")
    n = 0
    with _open(path) as out:
        for line in _lines(procedures.iterator(chunk_size=2000), form):
            out.write(line)
            n += 1
    return n


def _lines(procedures: Iterator[Procedure], form: ExportForm) -> Iterator[str]:
    for procedure in procedures:
        yield json.dumps(procedure_record(procedure, form=form), ensure_ascii=False) + "\n"


def _open(path: Path) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    if path.suffix == ".zst":
        import io

        import zstandard

        raw = zstandard.ZstdCompressor().stream_writer(path.open("wb"), closefd=True)
        return io.TextIOWrapper(raw, encoding="utf-8")  # type: ignore[arg-type]
    return path.open("w", encoding="utf-8")
