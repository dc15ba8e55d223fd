"""Importing source documents (the web pages procedures are mined from) from JSONL, CSV, Parquet or Arrow IPC,
plain or compressed: streamed (mining/readers.py), a batch per short transaction, idempotent.

Unlike bench files, a document file is not all-or-nothing: documents are independent, files are large, and a
partial import is simply completed by importing the file again. Each bad record is reported as
`file:line: field: reason` and skipped; nothing stored is ever changed by an import (a document id already
stored with a different text is reported as a conflict and kept as stored).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import reset_queries, transaction

from h2e_site.inputs import text_problem, text_problem_inside

from .models import SourceDocument
from .readers import ReadError, Record, iter_records
from .services import FileReport, ImportProgress, ImportReport, InvalidRecord, TopicCache

BATCH = 1000


@dataclass(frozen=True)
class DocumentFields:
    """Which record fields hold the id, text, url and topic (a dotted name reaches into an object)."""

    id: str = "id"
    text: str = "text"
    url: str = "url"
    topic: str = "topic"


@dataclass(frozen=True)
class DocumentData:
    doc_id: str
    text: str
    url: str
    topic: str
    extra: dict[str, Any]


def documents_import(
    *, paths: Iterable[Path], fields: DocumentFields | None = None, progress: ImportProgress | None = None
) -> ImportReport:
    """Import documents from each file; see the module doc."""
    paths = list(paths)
    fields = fields or DocumentFields()
    progress = progress or ImportProgress()
    progress.start(files_total=len(paths), bytes_total=sum(_size(p) for p in paths))
    report = ImportReport()
    seen: set[str] = set()  # doc_ids read so far in this import
    topics = TopicCache()
    for path in paths:
        file_report = FileReport(path=str(path))
        for batch in _batches(path, fields, file_report, seen):
            _store(batch, file_report, topics)
            progress.records(len(batch))
            reset_queries()  # with DEBUG on, Django would keep every INSERT (megabytes of text each)
        report.files.append(file_report)
        progress.file_done(path=str(path), ok=True, size=_size(path))
    progress.close()
    return report


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _batches(
    path: Path, fields: DocumentFields, report: FileReport, seen: set[str]
) -> Iterator[list[tuple[int, DocumentData]]]:
    batch: list[tuple[int, DocumentData]] = []
    for item in iter_records(path):
        if isinstance(item, ReadError):
            report.errors.append(str(item))
            continue
        data = _validated(path, item, fields, report)
        if data is None:
            continue
        if data.doc_id in seen:
            report.duplicates += 1
            continue
        seen.add(data.doc_id)
        batch.append((item.line, data))
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _validated(path: Path, item: Record, fields: DocumentFields, report: FileReport) -> DocumentData | None:
    try:
        return document_from_record(item.data, fields)
    except InvalidRecord as exc:
        report.errors.append(f"{path}:{item.line}: {exc.field_name}: {exc.reason}")
        return None


def document_from_record(record: dict[str, Any], fields: DocumentFields) -> DocumentData:
    """A document record, validated: a non-empty id (string or integer) and text; url and topic optional."""
    doc_id = _lookup(record, fields.id)
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise InvalidRecord(fields.id, _problem(doc_id, "a non-empty string or integer id"))
    if len(doc_id.strip()) > 255:
        raise InvalidRecord(fields.id, "longer than 255 characters")
    problem = text_problem(doc_id)
    if problem is not None:
        raise InvalidRecord(fields.id, problem)
    text = _lookup(record, fields.text)
    if not isinstance(text, str) or not text.strip():
        raise InvalidRecord(fields.text, _problem(text, "a non-empty string"))
    text = text.replace("\x00", "")  # NUL is removed from the text; a lone surrogate is refused
    problem = text_problem(text)
    if problem is not None:
        raise InvalidRecord(fields.text, problem)
    used = {
        fields.id.split(".")[0],
        fields.text.split(".")[0],
        fields.url.split(".")[0],
        fields.topic.split(".")[0],
    }
    extra = {key: _jsonable(value) for key, value in record.items() if key not in used}
    for key, value in extra.items():  # NUL is removed from them; a lone surrogate is not text
        problem = text_problem_inside([key, value])
        if problem is not None:
            raise InvalidRecord(key, problem)
    return DocumentData(
        doc_id=doc_id.strip(),
        text=text,
        url=_optional_text(record, fields.url),
        topic=_optional_text(record, fields.topic).strip(),
        extra=extra,
    )


def _lookup(record: dict[str, Any], name: str) -> Any:
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _problem(value: Any, expected: str) -> str:
    if value is None or value == "":
        return "missing or empty"
    return f"expected {expected}, got {type(value).__name__}"


def _optional_text(record: dict[str, Any], name: str) -> str:
    value = _lookup(record, name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRecord(name, f"expected a string, got {type(value).__name__}")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidRecord(name, problem)
    return value


def _jsonable(value: Any) -> Any:
    """A value as JSON can hold it (Parquet/Arrow give dates, decimals and bytes); NUL removed from text, as
    from the document's text (PostgreSQL's jsonb cannot hold it)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if value is None or isinstance(value, int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k).replace("\x00", ""): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").replace("\x00", "")
    return str(value).replace("\x00", "")


def _store(batch: list[tuple[int, DocumentData]], report: FileReport, topics: TopicCache) -> None:
    ids = [data.doc_id for _, data in batch]
    stored = dict(SourceDocument.objects.filter(doc_id__in=ids).values_list("doc_id", "text"))
    new = []
    for line, data in batch:
        if data.doc_id not in stored:
            new.append(_new_document(data, topics))
        elif stored[data.doc_id] == data.text:
            report.unchanged += 1
        else:
            report.conflicts.append(
                f"{report.path}:{line}: {data.doc_id!r} is already stored with a different text; "
                "not overwritten"
            )
    with transaction.atomic():
        created = SourceDocument.objects.bulk_create(new, ignore_conflicts=True)
    report.created += len(created)


def _new_document(data: DocumentData, topics: TopicCache) -> SourceDocument:
    return SourceDocument(
        doc_id=data.doc_id, text=data.text, url=data.url, topic_id=topics.id_for(data.topic), extra=data.extra
    )
