"""Writes for procedures: importing bench files (How2Mine exports, bench JSONL, the HF dataset columns).

Each file is imported in one transaction: without `skip_invalid` a file with any bad record imports
nothing; with it the good records import and the report lists what was skipped. Re-importing a file
changes nothing; a record whose id is already stored with different content is reported as a conflict
and never overwrites the stored procedure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from h2e_site.embeddings.jobs import embed_after
from h2e_site.inputs import text_problem

from .embedding import PROCEDURES
from .models import Procedure, Split, Topic
from .readers import ReadError, Record, iter_records

MAX_LISTED_ERRORS = 50
_BATCH = 2000


class ImportProgress:
    """Progress of an import, shared by the command's tqdm bar and the Job row. The base does nothing."""

    def start(self, *, files_total: int, bytes_total: int) -> None:
        """Called once with the number and total size of the input files."""

    def records(self, n: int) -> None:
        """Called as records are read (n since the last call)."""

    def file_done(self, *, path: str, ok: bool, size: int) -> None:
        """Called when a file is imported (ok) or rejected."""

    def close(self) -> None:
        """Called at the end."""


class TqdmProgress(ImportProgress):
    """A tqdm bar on stderr over the input bytes, with the record count as postfix."""

    def __init__(self, *, desc: str = "import", disable: bool = False) -> None:
        self.desc = desc
        self.disable = disable
        self.n_records = 0
        self.bar: Any = None

    def start(self, *, files_total: int, bytes_total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=bytes_total, desc=self.desc, unit="B", unit_scale=True, disable=self.disable, leave=True
        )

    def records(self, n: int) -> None:
        self.n_records += n
        if self.bar is not None and n:
            self.bar.set_postfix(records=self.n_records, refresh=False)

    def file_done(self, *, path: str, ok: bool, size: int) -> None:
        if self.bar is not None:
            self.bar.update(size)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class InvalidRecord(ValueError):
    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field_name = field_name
        self.reason = reason


@dataclass
class FileReport:
    """What happened to one input file."""

    path: str
    imported: bool = True
    created: int = 0
    unchanged: int = 0
    duplicates: int = 0
    conflicts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.errors) if self.imported else 0

    def summary(self) -> str:
        if not self.imported:
            return f"{self.path}: REJECTED, nothing imported ({len(self.errors)} bad record(s))"
        parts = [f"{self.created} created", f"{self.unchanged} already present"]
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate line(s) collapsed")
        if self.conflicts:
            parts.append(f"{len(self.conflicts)} conflict(s) with stored data, not overwritten")
        if self.errors:
            parts.append(f"{len(self.errors)} bad record(s) skipped")
        return f"{self.path}: " + ", ".join(parts)


@dataclass
class ImportReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.imported for f in self.files)

    @property
    def n_errors(self) -> int:
        return sum(len(f.errors) for f in self.files)

    def error_lines(self, limit: int = MAX_LISTED_ERRORS) -> list[str]:
        """Every rejected record as `path:line: field: reason`, at most `limit`, then a count of the rest."""
        lines = [e for f in self.files for e in f.errors]
        if len(lines) > limit:
            return [*lines[:limit], f"... and {len(lines) - limit} more bad record(s)"]
        return lines

    def conflict_lines(self, limit: int = MAX_LISTED_ERRORS) -> list[str]:
        lines = [c for f in self.files for c in f.conflicts]
        if len(lines) > limit:
            return [*lines[:limit], f"... and {len(lines) - limit} more conflict(s)"]
        return lines

    def summary_lines(self) -> list[str]:
        return [line for f in self.files for line in (f.summary(), *f.notes)]

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": [
                {
                    "path": f.path,
                    "imported": f.imported,
                    "created": f.created,
                    "unchanged": f.unchanged,
                    "duplicates": f.duplicates,
                    "conflicts": f.conflicts[:MAX_LISTED_ERRORS],
                    "n_conflicts": len(f.conflicts),
                    "errors": f.errors[:MAX_LISTED_ERRORS],
                    "n_errors": len(f.errors),
                    "notes": f.notes,
                }
                for f in self.files
            ],
        }


# --- validation -----------------------------------------------------------------------------------


MAX_ID_CHARS = 255  # Procedure.source_example_id
MAX_TOPIC_CHARS = 200  # Topic.name


def require_str(
    record: dict[str, Any], key: str, *, allow_empty: bool = False, default: str = "", max_length: int = 0
) -> str:
    """A string field: refused when missing (unless allow_empty), not a string, holding what no text column
    can (a NUL or a lone surrogate: h2e_site.inputs.text_problem) or, with max_length, longer than its
    column once stripped."""
    value = record.get(key, default)
    if value is None:
        if allow_empty:
            return ""
        raise InvalidRecord(key, "missing or empty")
    if isinstance(value, int) and not isinstance(value, bool) and key.endswith("id"):
        value = str(value)
    if not isinstance(value, str):
        raise InvalidRecord(key, f"expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidRecord(key, "missing or empty")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidRecord(key, problem)
    if max_length and len(value.strip()) > max_length:
        raise InvalidRecord(key, f"longer than {max_length} characters")
    return value


def require_str_list(record: dict[str, Any], key: str, *, non_empty: bool, default: Any = None) -> list[str]:
    value = record.get(key, default)
    if value is None and not non_empty:
        return []
    if not isinstance(value, list):
        raise InvalidRecord(key, f"expected a list of strings, got {type(value).__name__}")
    if non_empty and not value:
        raise InvalidRecord(key, "empty list")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidRecord(f"{key}[{i}]", f"expected a string, got {type(item).__name__}")
        if non_empty and not item.strip():
            raise InvalidRecord(f"{key}[{i}]", "empty step")
        problem = text_problem(item)
        if problem is not None:
            raise InvalidRecord(f"{key}[{i}]", problem)
    return value


@dataclass(frozen=True)
class ProcedureData:
    source_example_id: str
    topic: str
    goal: str
    steps: list[str]
    resources: list[str]
    url: str = ""
    source_text: str = ""
    ordered: bool | None = None  # whether the order of its steps matters (None: not known)

    def content(self) -> tuple[str, str, list[str], list[str]]:
        return (self.topic, self.goal, self.steps, self.resources)


def procedure_from_record(record: dict[str, Any]) -> ProcedureData:
    """A bench record in any accepted form (How2Mine export, bench JSONL, HF columns), validated."""
    if "final_procedure" in record and "source_example" in record:
        return _from_how2mine_export(record)
    source_id = record.get("source_example_id") or record.get("id")
    return ProcedureData(
        source_example_id=require_str(
            {"source_example_id": source_id}, "source_example_id", max_length=MAX_ID_CHARS
        ).strip(),
        topic=require_str(record, "topic", allow_empty=True, max_length=MAX_TOPIC_CHARS).strip(),
        goal=require_str(record, "goal").strip(),
        steps=require_str_list(record, "steps", non_empty=True),
        resources=require_str_list(record, "resources", non_empty=False),
        url=require_str(record, "url", allow_empty=True),
        source_text=require_str(record, "source_text", allow_empty=True),
        ordered=optional_bool(record, "ordered"),
    )


def optional_bool(record: dict[str, Any], key: str) -> bool | None:
    """true / false, or None when absent or null (a CSV cell: "true", "false" or empty)."""
    value = record.get(key)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"", "true", "false"}:
        return {"": None, "true": True, "false": False}[value.strip().lower()]
    raise InvalidRecord(key, f"expected true or false, got {value!r}"[:120])


def _from_how2mine_export(record: dict[str, Any]) -> ProcedureData:
    source, final = record["source_example"], record["final_procedure"]
    if not isinstance(source, dict):
        raise InvalidRecord("source_example", "expected an object")
    if not isinstance(final, dict):
        raise InvalidRecord("final_procedure", "expected an object")
    source_id = source.get("id") or record.get("id")
    topic = source.get("topic") or record.get("topic") or ""
    try:
        return ProcedureData(
            source_example_id=require_str(
                {"source_example.id": source_id}, "source_example.id", max_length=MAX_ID_CHARS
            ).strip(),
            topic=require_str(
                {"source_example.topic": topic},
                "source_example.topic",
                allow_empty=True,
                max_length=MAX_TOPIC_CHARS,
            ),
            goal=require_str(final, "goal").strip(),
            steps=require_str_list(final, "steps", non_empty=True),
            resources=require_str_list(final, "resources", non_empty=False),
            url=require_str(source, "url", allow_empty=True),
            source_text=require_str(source, "text", allow_empty=True),
            ordered=optional_bool(record, "ordered"),
        )
    except InvalidRecord as exc:
        name = exc.field_name
        prefix = "" if name.startswith("source_example") else "final_procedure."
        if name in {"url", "text"}:
            prefix = "source_example."
        if name == "ordered":
            prefix = ""
        raise InvalidRecord(prefix + name, exc.reason) from None


# --- topics ---------------------------------------------------------------------------------------


class TopicCache:
    """Topic ids by name; unknown topics are created with is_weborganizer=False."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = dict(Topic.objects.values_list("name", "id"))

    def id_for(self, name: str) -> int | None:
        name = name.strip()
        if not name:
            return None
        if name not in self._ids:
            topic, _ = Topic.objects.get_or_create(name=name, defaults={"is_weborganizer": False})
            self._ids[name] = topic.pk
        return self._ids[name]


# --- bench import ---------------------------------------------------------------------------------


class _RejectFile(Exception):
    """Raised inside a file's transaction to roll it back."""


def bench_import(
    *,
    paths: Iterable[Path],
    split: str = Split.BENCH,
    skip_invalid: bool = False,
    progress: ImportProgress | None = None,
) -> ImportReport:
    """Import procedures from bench files (any reader format), one transaction per file."""
    if split not in Split.values:
        raise ValueError(f"unknown split {split!r}: expected one of {', '.join(Split.values)}")
    paths = list(paths)
    progress = progress or ImportProgress()
    progress.start(files_total=len(paths), bytes_total=sum(_size(p) for p in paths))
    report = ImportReport()
    for path in paths:
        file_report = _import_bench_file(path, split=split, skip_invalid=skip_invalid, progress=progress)
        report.files.append(file_report)
        progress.file_done(path=str(path), ok=file_report.imported, size=_size(path))
    progress.close()
    if any(f.created for f in report.files):
        embed_after(PROCEDURES)  # the new texts' vectors, before a build or a split needs them
    return report


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _import_bench_file(path: Path, *, split: str, skip_invalid: bool, progress: ImportProgress) -> FileReport:
    report = FileReport(path=str(path))
    try:
        with transaction.atomic():
            topics = TopicCache()
            seen: dict[str, tuple[int, ProcedureData]] = {}
            for batch in _valid_batches(path, report, seen, progress):
                _store_batch(batch, report, topics, split=split, path=str(path))
            if report.errors and not skip_invalid:
                raise _RejectFile
    except _RejectFile:
        report.imported = False
        report.created = report.unchanged = report.duplicates = 0
        report.conflicts = []
    return report


def _valid_batches(
    path: Path, report: FileReport, seen: dict[str, tuple[int, ProcedureData]], progress: ImportProgress
) -> Iterator[list[tuple[int, ProcedureData]]]:
    batch: list[tuple[int, ProcedureData]] = []
    for item in iter_records(path):
        if isinstance(item, ReadError):
            report.errors.append(str(item))
            continue
        data = _validated(path, item, report)
        if data is None:
            continue
        earlier = seen.get(data.source_example_id)
        if earlier is not None:
            _note_duplicate(path, item.line, earlier, data, report)
            continue
        seen[data.source_example_id] = (item.line, data)
        batch.append((item.line, data))
        if len(batch) >= _BATCH:
            progress.records(len(batch))
            yield batch
            batch = []
    if batch:
        progress.records(len(batch))
        yield batch


def _validated(path: Path, item: Record, report: FileReport) -> ProcedureData | None:
    try:
        return procedure_from_record(item.data)
    except InvalidRecord as exc:
        report.errors.append(f"{path}:{item.line}: {exc.field_name}: {exc.reason}")
        return None


def _note_duplicate(
    path: Path, line: int, earlier: tuple[int, ProcedureData], data: ProcedureData, report: FileReport
) -> None:
    if earlier[1].content() == data.content():
        report.duplicates += 1
    else:
        report.conflicts.append(
            f"{path}:{line}: source_example_id: {data.source_example_id!r} repeats line {earlier[0]} "
            "with different content; the first one is kept"
        )


def _store_batch(
    batch: list[tuple[int, ProcedureData]], report: FileReport, topics: TopicCache, *, split: str, path: str
) -> None:
    ids = [data.source_example_id for _, data in batch]
    stored = {
        p.source_example_id: p
        for p in Procedure.objects.filter(source_example_id__in=ids).select_related("topic")
    }
    new: list[Procedure] = []
    for line, data in batch:
        existing = stored.get(data.source_example_id)
        if existing is None:
            new.append(_new_procedure(data, topics, split))
        elif _same_content(existing, data):
            report.unchanged += 1
        else:
            report.conflicts.append(
                f"{path}:{line}: source_example_id: {data.source_example_id!r} is already stored with "
                "different content; not overwritten"
            )
    Procedure.objects.bulk_create(new, batch_size=_BATCH)
    report.created += len(new)


def _new_procedure(data: ProcedureData, topics: TopicCache, split: str) -> Procedure:
    return Procedure(
        source_example_id=data.source_example_id,
        topic_id=topics.id_for(data.topic),
        goal=data.goal,
        steps=data.steps,
        resources=data.resources,
        url=data.url,
        source_text=data.source_text,
        split=split,
        ordered=data.ordered,
    )


def _same_content(procedure: Procedure, data: ProcedureData) -> bool:
    topic = procedure.topic.name if procedure.topic else ""
    return (topic, procedure.goal, procedure.steps, procedure.resources) == data.content()
