"""Import a whole `h2e bench run` output tree: generations, judgments, their manifests.

Layout read (aggregate/ files are derived and ignored):
    <out_root>/<run_name>_<generator_id>/generations.jsonl + generation_manifest.json
    <out_root>/<run>/judgments/<short>_<judge_id>/judgments.jsonl + judge_manifest.json

Each file is validated and stored in its own transaction; without `skip_invalid` a file with any bad line
stores nothing. Procedures missing from the database are created from the records. Duplicated lines keep
one generation per (generator, procedure) and one judgment per (judge, generation) - the last line wins -
and are counted in the report (the reference CLI counts duplicated judgments twice; we deliberately don't).
Record fields outside the h2e schema go to `.extra`; record copies of L1/L2 that differ from the stored
procedure/generation are kept in `.extra["_h2e_record"]` so export writes the record back as it was.

On PostgreSQL the validated rows are streamed with COPY into temporary staging tables and moved with
INSERT ... SELECT ... ON CONFLICT DO NOTHING; elsewhere (SQLite) the same steps run through the ORM.

Two database sessions at once: a run's judgments files (one per judge) depend on its generations file only,
not on each other, so when the import is not inside a caller's transaction they are imported side by side,
each in its own transaction on its own connection (H2E_IMPORT_WORKERS, 2 by default). PostgreSQL's work on
them (index upkeep, full-text entries of the critical failures) is most of an import's time, and one session
uses one core.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from django.db import connection, transaction

from h2e_site.embeddings.jobs import embed_after
from h2e_site.inputs import text_problem_inside
from judging.models import Generator, Judge
from mining.embedding import PROCEDURES
from mining.readers import ReadError, iter_records
from mining.services import (
    MAX_ID_CHARS,
    MAX_TOPIC_CHARS,
    FileReport,
    ImportProgress,
    ImportReport,
    InvalidRecord,
    require_str,
    require_str_list,
)

from . import h2e_store
from .embedding import JUDGE_FAILURES
from .h2e_manifests import generator_fields, judge_fields, read_manifest

OVERRIDES_KEY = h2e_store.OVERRIDES_KEY
MAX_N_FAILURES = 2**31 - 1  # Judgment.n_failures is an IntegerField
GENERATION_KEYS = frozenset(
    {
        "schema_version",
        "generator_id",
        "generation_prompt_sha256",
        "source_example_id",
        "topic",
        "goal",
        "steps",
        "resources",
        "model_completion",
        "predicted_steps",
        "prompt",
        "generator",
    }
)
JUDGMENT_KEYS = frozenset(
    {
        "schema_version",
        "judge_id",
        "judge_prompt_sha256",
        "source_example_id",
        "topic",
        "goal",
        "steps",
        "resources",
        "predicted_steps",
        "judge",
        "reasoning",
        "critical_failures",
        "has_failure",
        "n_failures",
        "parse_failed",
    }
)
_PROGRESS_EVERY = 5000


@dataclass(frozen=True)
class RunFiles:
    run_dir: Path
    generations: Path
    judgments: list[Path] = field(default_factory=list)


def discover_runs(out_root: Path) -> list[RunFiles]:
    """Every run directory with a generations file, and its judge directories, in name order."""
    if not out_root.is_dir():
        raise FileNotFoundError(f"{out_root}: not a directory")
    candidates = (
        [out_root]
        if _data_file(out_root, "generations")
        else sorted((p for p in out_root.iterdir() if p.is_dir()), key=lambda p: p.name)
    )
    runs: list[RunFiles] = []
    for run_dir in candidates:
        generations = _data_file(run_dir, "generations")
        if generations is None:
            continue
        judge_root = run_dir / "judgments"
        judge_dirs = (
            sorted((p for p in judge_root.iterdir() if p.is_dir()), key=lambda p: p.name)
            if (judge_root.is_dir())
            else []
        )
        judgments = [f for f in (_data_file(d, "judgments") for d in judge_dirs) if f is not None]
        runs.append(RunFiles(run_dir, generations, judgments))
    return runs


def _data_file(folder: Path, stem: str) -> Path | None:
    for suffix in ("", ".zst", ".gz", ".bz2", ".xz"):
        candidate = folder / f"{stem}.jsonl{suffix}"
        if candidate.is_file():
            return candidate
    return None


def h2e_import(
    *,
    out_root: Path,
    skip_invalid: bool = False,
    progress: ImportProgress | None = None,
    use_copy: bool | None = None,
) -> ImportReport:
    """Import every run of an h2e out_root; one transaction per file.

    use_copy: COPY + SQL (PostgreSQL only) or the portable ORM path; by default COPY on PostgreSQL.
    """
    runs = discover_runs(out_root)
    files = [p for run in runs for p in (run.generations, *run.judgments)]
    progress = progress or ImportProgress()
    progress.start(files_total=len(files), bytes_total=sum(_size(p) for p in files))
    report = ImportReport()
    known = _Known(enabled=connection.vendor == "postgresql" if use_copy is None else use_copy)
    if known.enabled:
        h2e_store.prepare_session(connection)
    for run in runs:
        gen_report, generator_pk = _import_generations(
            run, known, skip_invalid=skip_invalid, progress=progress
        )
        report.files.append(gen_report)
        progress.file_done(path=str(run.generations), ok=gen_report.imported, size=_size(run.generations))
        judged = _import_judgment_files(
            run.judgments, known, generator_pk=generator_pk, skip_invalid=skip_invalid, progress=progress
        )
        for path, judg_report in zip(run.judgments, judged, strict=True):
            report.files.append(judg_report)
            progress.file_done(path=str(path), ok=judg_report.imported, size=_size(path))
    if known.enabled and any(f.created for f in report.files):
        h2e_store.analyze_tables(connection)
    progress.close()
    if any(f.created for f in report.files):
        embed_after(PROCEDURES, JUDGE_FAILURES)  # their vectors, before a build or a search needs them
    return report


def _size(path: Path) -> int:
    return os.path.getsize(path)


class _RejectFile(Exception):
    pass


def import_workers() -> int:
    """How many judgments files are imported at once (H2E_IMPORT_WORKERS; 1 = one after the other)."""
    try:
        return max(1, int(os.environ.get("H2E_IMPORT_WORKERS", "2")))
    except ValueError:
        return 2


def _import_judgment_files(
    paths: list[Path],
    known: _Known,
    *,
    generator_pk: int | None,
    skip_invalid: bool,
    progress: ImportProgress,
) -> list[FileReport]:
    """A run's judgments files: side by side on their own connections when that is safe (the COPY path, not
    inside a caller's transaction: each file commits on its own), else one after the other."""
    workers = min(import_workers(), len(paths))
    if workers < 2 or not known.enabled or connection.in_atomic_block:
        return [
            _import_judgments(
                path, known, generator_pk=generator_pk, skip_invalid=skip_invalid, progress=progress
            )
            for path in paths
        ]
    counted = _CountedProgress()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="h2e-import") as pool:
        futures = [
            pool.submit(_on_own_connection, path, known, generator_pk=generator_pk, skip_invalid=skip_invalid,
                        progress=counted)
            for path in paths
        ]  # fmt: skip
        reports = [future.result() for future in futures]
    progress.records(counted.n_records)
    return reports


def _on_own_connection(path: Path, known: _Known, **options: Any) -> FileReport:
    """_import_judgments in a worker thread: Django gives the thread its own connection, closed after."""
    try:
        h2e_store.prepare_session(connection)
        return _import_judgments(path, known, **options)
    finally:
        connection.close()


class _CountedProgress(ImportProgress):
    """Records counted in worker threads (the Job row and the bar are written by the importing thread)."""

    def __init__(self) -> None:
        self.n_records = 0
        self._lock = threading.Lock()

    def records(self, n: int) -> None:
        with self._lock:
            self.n_records += n


L1 = tuple[str, str, list[str], list[str]]


@dataclass
class _Known:
    """What this import has stored, so COPY staging rows can leave out record copies equal to it.

    enabled: the COPY path is in use (the ORM path always stages whole records).

    procedures: stored (topic, goal, steps, resources) by source_example_id; predicted: the current run's
    stored L2 steps. A staged NULL means "equal to the stored value" (no override to keep).
    """

    enabled: bool
    procedures: dict[str, L1] = field(default_factory=dict)
    predicted: dict[str, list[str]] = field(default_factory=dict)

    def same_l1(self, source_example_id: str, l1: L1) -> bool:
        return self.enabled and self.procedures.get(source_example_id) == l1

    def same_l2(self, source_example_id: str, predicted: list[str]) -> bool:
        return self.enabled and self.predicted.get(source_example_id) == predicted

    def remember_procedures(self, stored: dict[str, L1]) -> None:
        if len(self.procedures) + len(stored) > _MAX_KNOWN:
            self.procedures.clear()
        self.procedures.update(stored)


_MAX_KNOWN = 200_000


def _id_from_dir(name: str) -> str:
    return name.rsplit("_", 1)[-1] if "_" in name else name


# --- record validation ----------------------------------------------------------------------------


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _extra(record: dict[str, Any], known: frozenset[str]) -> str:
    """The record's other fields as JSON for the `extra` column (orjson: at most 254 deep; jsonb: no NUL, and
    no text holds a lone surrogate)."""
    extra = {k: v for k, v in record.items() if k not in known}
    for key, value in extra.items():
        problem = text_problem_inside([key, value])
        if problem is not None:
            raise InvalidRecord(key, problem)
    try:
        return _json(extra)
    except orjson.JSONEncodeError as exc:
        raise InvalidRecord(next(iter(extra), "extra"), f"cannot be stored: {exc}") from None


Built = tuple[tuple[Any, ...], str, Any]  # (staging row, source_example_id, what the run keeps of it)


def _l1_columns(record: dict[str, Any], *, non_empty: bool) -> L1:
    return (
        require_str(record, "topic", allow_empty=True, max_length=MAX_TOPIC_CHARS),
        require_str(record, "goal", allow_empty=not non_empty),
        require_str_list(record, "steps", non_empty=non_empty),
        require_str_list(record, "resources", non_empty=False),
    )


def _l1_row(sid: str, l1: L1, known: _Known) -> tuple[Any, ...]:
    if known.same_l1(sid, l1):
        return (None, None, None, None)
    return (l1[0], l1[1], _json(l1[2]), _json(l1[3]))


def _generation_row(line: int, rec: dict[str, Any], known: _Known) -> Built:
    sid = require_str(rec, "source_example_id", max_length=MAX_ID_CHARS).strip()
    l1 = _l1_columns(rec, non_empty=True)
    predicted = require_str_list(rec, "predicted_steps", non_empty=False)
    row = (
        line,
        sid,
        *_l1_row(sid, l1, known),
        require_str(rec, "prompt", allow_empty=True),
        require_str(rec, "model_completion", allow_empty=True),
        _json(predicted),
        _extra(rec, GENERATION_KEYS),
    )
    return row, sid, predicted


def _bool(rec: dict[str, Any], key: str) -> bool:
    value = rec.get(key, False)
    if not isinstance(value, bool):
        raise InvalidRecord(key, f"expected true or false, got {value!r}")
    return value


def _step_numbers(failure: dict[str, Any], key: str, where: str) -> list[int]:
    value = failure.get(key, [])
    if not isinstance(value, list):
        raise InvalidRecord(f"{where}.{key}", f"expected a list of integers, got {type(value).__name__}")
    for number in value:
        if not isinstance(number, int) or isinstance(number, bool):
            raise InvalidRecord(f"{where}.{key}", f"step number {number!r} is not an integer")
    return value


def _failures(rec: dict[str, Any]) -> list[dict[str, Any]]:
    failures = rec.get("critical_failures", [])
    if not isinstance(failures, list):
        raise InvalidRecord("critical_failures", f"expected a list, got {type(failures).__name__}")
    cleaned = []
    for i, failure in enumerate(failures):
        where = f"critical_failures[{i}]"
        if not isinstance(failure, dict):
            raise InvalidRecord(where, "expected an object")
        text = failure.get("failure", "")
        if not isinstance(text, str):
            raise InvalidRecord(f"{where}.failure", "expected a string")
        cleaned.append(
            {
                "failure": text,
                "L1_steps": _step_numbers(failure, "L1_steps", where),
                "L2_steps": _step_numbers(failure, "L2_steps", where),
            }
        )
    return cleaned


def _judgment_row(line: int, rec: dict[str, Any], known: _Known) -> Built:
    sid = require_str(rec, "source_example_id", max_length=MAX_ID_CHARS).strip()
    n_failures = rec.get("n_failures", 0)
    if not isinstance(n_failures, int) or isinstance(n_failures, bool) or n_failures < 0:
        raise InvalidRecord("n_failures", f"expected a non-negative integer, got {n_failures!r}"[:120])
    if n_failures > MAX_N_FAILURES:
        raise InvalidRecord(
            "n_failures", f"expected at most {MAX_N_FAILURES} (its column), got {n_failures}"[:120]
        )
    predicted = require_str_list(rec, "predicted_steps", non_empty=False)
    row = (
        line,
        sid,
        *_l1_row(sid, _l1_columns(rec, non_empty=False), known),
        None if known.same_l2(sid, predicted) else _json(predicted),
        require_str(rec, "reasoning", allow_empty=True),
        _bool(rec, "parse_failed"),
        _bool(rec, "has_failure"),
        n_failures,
        _json(_failures(rec)),
        _extra(rec, JUDGMENT_KEYS),
    )
    return row, sid, None


class _FileRows:
    """The valid staging rows of one file, streamed; bad lines go to the report, ids are tracked."""

    def __init__(
        self,
        path: Path,
        report: FileReport,
        build: Callable[[int, dict[str, Any], _Known], Built],
        known: _Known,
        id_check: tuple[str, str],
        progress: ImportProgress,
    ) -> None:
        self.path, self.report, self.build, self.known = path, report, build, known
        self.id_key, self.expected_id = id_check
        self.progress = progress
        self.kept: dict[str, Any] = {}
        self.n_rows = 0

    @property
    def duplicates(self) -> int:
        return self.n_rows - len(self.kept)

    def __iter__(self) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
        pending = 0
        for item in iter_records(self.path):
            if isinstance(item, ReadError):
                self.report.errors.append(str(item))
                continue
            try:
                row, sid, keep = self.build(item.line, item.data, self.known)
                _check_id(item.data, self.id_key, self.expected_id)
            except InvalidRecord as exc:
                self.report.errors.append(f"{self.path}:{item.line}: {exc.field_name}: {exc.reason}")
                continue
            self.n_rows += 1
            self.kept[sid] = keep
            pending += 1
            if pending == _PROGRESS_EVERY:
                self.progress.records(pending)
                pending = 0
            yield row, item.data
        self.progress.records(pending)


def _check_id(record: dict[str, Any], key: str, expected: str) -> None:
    value = record.get(key)
    if expected and value not in (None, "", expected):
        raise InvalidRecord(key, f"{value!r} differs from this run's {expected!r}")


# --- generations ----------------------------------------------------------------------------------


def _import_generations(
    run: RunFiles, known: _Known, *, skip_invalid: bool, progress: ImportProgress
) -> tuple[FileReport, int | None]:
    path = run.generations
    report = FileReport(path=str(path))
    known.predicted = {}
    manifest = read_manifest(run.run_dir / "generation_manifest.json", report)
    generator_id = str((manifest or {}).get("generator_id") or "")
    rows = _FileRows(path, report, _generation_row, known, ("generator_id", generator_id), progress)
    try:
        with transaction.atomic():
            store = _store(known)
            store.stage_generations(rows)
            first = store.first_record or {}
            generator_id = (
                generator_id or str(first.get("generator_id") or "") or _id_from_dir(run.run_dir.name)
            )
            if report.errors and not skip_invalid:
                raise _RejectFile
            if not rows.n_rows:
                report.notes.append(f"{path}: no records")
                return report, _generator_pk(generator_id)
            generator = _generator_row(run, generator_id, manifest, first, report)
            report.duplicates = rows.duplicates
            store.store_generations(generator.pk, report, deduplicate=rows.duplicates > 0)
            if known.enabled:
                _remember(known, store, rows)
    except _RejectFile:
        _reset(report)
        return report, _generator_pk(generator_id)
    return report, generator.pk


def _store(known: _Known) -> h2e_store.PgStore | h2e_store.OrmStore:
    return h2e_store.PgStore(connection) if known.enabled else h2e_store.OrmStore()


def _remember(known: _Known, store: Any, rows: _FileRows) -> None:
    """After a generations file is stored: its procedures' stored L1 and the run's stored L2 steps."""
    unknown = [sid for sid in rows.kept if sid not in known.procedures]
    if unknown:
        known.remember_procedures(store.stored_procedures(unknown))
    known.predicted = {sid: steps for sid, steps in rows.kept.items() if sid not in store.conflicting}


def _generator_pk(generator_id: str) -> int | None:
    return Generator.objects.filter(generator_id=generator_id).values_list("pk", flat=True).first()


def _generator_row(
    run: RunFiles,
    generator_id: str,
    manifest: dict[str, Any] | None,
    first: dict[str, Any],
    report: FileReport,
) -> Generator:
    suffix = f"_{generator_id}"
    name = run.run_dir.name
    run_name = name[: -len(suffix)] if name.endswith(suffix) else name
    fields = generator_fields(manifest, first)
    generator, created = Generator.objects.get_or_create(
        generator_id=generator_id, defaults={**fields, "run_name": run_name}
    )
    if created and manifest is None:
        report.notes.append(
            f"{run.run_dir}: no generation_manifest.json; generator {generator_id} built from the records"
        )
    return generator


def _reset(report: FileReport) -> None:
    report.imported = False
    report.created = report.unchanged = report.duplicates = 0
    report.conflicts = []
    report.notes = []


# --- judgments ------------------------------------------------------------------------------------


def _import_judgments(
    path: Path, known: _Known, *, generator_pk: int | None, skip_invalid: bool, progress: ImportProgress
) -> FileReport:
    report = FileReport(path=str(path))
    manifest = read_manifest(path.parent / "judge_manifest.json", report)
    judge_id = str((manifest or {}).get("judge_id") or "")
    rows = _FileRows(path, report, _judgment_row, known, ("judge_id", judge_id), progress)
    try:
        with transaction.atomic():
            store = _store(known)
            store.stage_judgments(rows)
            first = store.first_record or {}
            judge_id = judge_id or str(first.get("judge_id") or "") or _id_from_dir(path.parent.name)
            if generator_pk is None:
                store.report_missing_generations(path, report)
            else:
                store.check_generations(path, generator_pk, report)
            if report.errors and not skip_invalid:
                raise _RejectFile
            if store.n_staged and generator_pk is not None:
                judge = _judge_row(path, judge_id, manifest, first, report)
                report.duplicates = rows.duplicates
                store.store_judgments(judge.pk, generator_pk, report, deduplicate=rows.duplicates > 0)
            elif not rows.n_rows:
                report.notes.append(f"{path}: no records")
    except _RejectFile:
        _reset(report)
    return report


def _judge_row(
    path: Path, judge_id: str, manifest: dict[str, Any] | None, first: dict[str, Any], report: FileReport
) -> Judge:
    judge, created = Judge.objects.get_or_create(judge_id=judge_id, defaults=judge_fields(manifest, first))
    if created and manifest is None:
        report.notes.append(f"{path.parent}: no judge_manifest.json; judge {judge_id} built from the records")
    return judge
