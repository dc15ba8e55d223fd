"""Step-type labels and predictions from files: a label set (human labels from outside, e.g. a published
dataset, or a study's own export) or an imported classifier's predictions, in the one-row-per-candidate shape
exports.py writes. JSON lines or CSV (any file mining.readers reads: .jsonl/.json, .csv, .parquet, .arrow,
optionally .zst/.gz/.bz2/.xz compressed), streamed, never read whole.

A row names
- its procedure by `source_example_id` or, when that is empty, by `procedure` (the pk in this database): an
  export from another instance matches on source_example_id, whatever its pks;
- its candidate by `candidate` (the key, "sequential:0-1", "interchangeable@0:1-2", "optional@0:1") or by
  `type` with `anchor`, `first`, `second` (0-based step indices); when both are given they must agree. The
  candidate must exist for the procedure's step count;
- labels: `annotator` (required), `holds` (true / false: JSON booleans, or the words in any case), `expert`
  (true / false / empty), `task_expert` (true / false / empty: checked, not stored: a label set has no field
  for the task-level answer yet), `is_attention_check` (true: the row is skipped, and counted);
- predictions: `holds` (true / false; empty or null when the answer could not be parsed), `unparsable`
  (optional, must agree with holds), `raw_output` (optional), `model` (optional; every row must name the same
  model, the classifier's).
Other columns (goal, topic, submitted_at, ...) are ignored.

Every bad row is reported as `file:line: field: reason` (unknown procedure, malformed key, a candidate the
procedure does not have, a label that is not true / false, the same annotator twice on one candidate, ...).
The file is imported in one transaction: without `skip_invalid` a file with a bad row imports nothing; with it
the good rows import and the report lists the rest. Importing the same file twice changes nothing; a row that
disagrees with what is stored is reported as a conflict and never overwrites it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from django.db import transaction

from annotation.kinds.step_types.candidates import Candidate, StepType, candidates
from annotation.kinds.step_types.models import (
    StepCandidate,
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from annotation.kinds.step_types.spec import procedure_candidates
from h2e_site.inputs import clean_text, text_problem
from h2e_site.web import CSV_FORMULA_STARTS
from mining.models import Procedure
from mining.readers import ReadError, Record, format_of, iter_records
from mining.services import FileReport, ImportProgress, ImportReport, InvalidRecord

__all__ = ["step_type_labels_import", "step_type_predictions_import"]

_BATCH = 2000
_MAX_INDEX = 32767  # StepCandidate's PositiveSmallIntegerField
_MAX_PK = 2**63 - 1
_SLUG = re.compile(r"[-a-zA-Z0-9_]{1,64}")
# a classifier's name is a segment of its predictions' URL: unreserved characters only, and never "." or ".."
# (a browser resolves those dot-segments away, so the link could never be followed): no leading dot
_CLASSIFIER = re.compile(r"[a-zA-Z0-9][-a-zA-Z0-9_.]{0,63}")
_KEY_EXAMPLES = "'sequential:0-1', 'interchangeable@0:1-2' or 'optional@0:1'"
_SKIP: Literal["skip"] = "skip"  # an attention-check row: not imported, counted


class _RejectFile(Exception):
    """Raised inside the file's transaction to roll it back."""


@dataclass(frozen=True)
class _Row:
    """One valid row, its procedure resolved to a pk."""

    line: int
    procedure: int
    key: str
    annotator: str
    holds: bool | None
    expert: bool | None = None
    raw_output: str = ""


@dataclass(frozen=True)
class _Parsed:
    """One row as read, before its procedure is looked up: ref is ("source_example_id", str) or
    ("procedure", pk)."""

    line: int
    ref: tuple[str, str | int]
    candidate: Candidate
    annotator: str
    holds: bool | None
    expert: bool | None
    raw_output: str
    model: str


# --- the two targets ----------------------------------------------------------------------------------------


class _Target:
    """Where valid rows go: a label set or an imported classifier."""

    duplicate_field = "candidate"

    def parse(self, data: dict[str, Any], *, in_csv: bool) -> tuple[str, bool | None, bool | None, str, str]:
        """annotator, holds, expert, raw_output, model of a row (InvalidRecord when one is bad)."""
        raise NotImplementedError

    def identity(self, row: _Row) -> tuple[Any, ...]:
        raise NotImplementedError

    def check(self, parsed: _Parsed) -> None:
        """Checks across rows (InvalidRecord), once the row is otherwise valid."""

    def store(self, rows: list[_Row], report: FileReport, path: Path) -> None:
        raise NotImplementedError


class _LabelSetTarget(_Target):
    duplicate_field = "annotator"

    def __init__(self, name: str, source_file: str) -> None:
        self.name = name
        self.source_file = source_file
        self.label_set: StepTypeLabelSet | None = None

    def parse(self, data: dict[str, Any], *, in_csv: bool) -> tuple[str, bool | None, bool | None, str, str]:
        annotator = _text(data, "annotator", required=True, max_length=128, in_csv=in_csv)
        holds = _bool(data, "holds", required=True)
        expert = _bool(data, "expert", required=False)
        _bool(data, "task_expert", required=False)
        return annotator, holds, expert, "", ""

    def identity(self, row: _Row) -> tuple[Any, ...]:
        return (row.annotator, row.procedure, row.key)

    def store(self, rows: list[_Row], report: FileReport, path: Path) -> None:
        if not rows:
            return
        if self.label_set is None:
            self.label_set, _ = StepTypeLabelSet.objects.get_or_create(
                name=self.name, defaults={"source_file": self.source_file[:255]}
            )
        ids = _candidate_ids({row.procedure for row in rows})
        stored = {
            (annotator, candidate): (holds, expert)
            for annotator, candidate, holds, expert in StepTypeLabel.objects.filter(
                label_set=self.label_set, candidate_id__in=ids.values()
            ).values_list("annotator", "candidate_id", "holds", "expert")
        }
        new = []
        for row in rows:
            candidate = ids[(row.procedure, row.key)]
            earlier = stored.get((row.annotator, candidate))
            if earlier is None:
                new.append(
                    StepTypeLabel(
                        candidate_id=candidate,
                        label_set=self.label_set,
                        annotator=row.annotator,
                        holds=row.holds is True,  # parse() requires it: never None here
                        expert=row.expert,
                    )
                )
            elif earlier == (row.holds, row.expert):
                report.unchanged += 1
            else:
                report.conflicts.append(
                    f"{path}:{row.line}: holds: {row.annotator!r} on {row.key} of procedure {row.procedure} "
                    f"is stored as holds={_word(earlier[0])} expert={_word(earlier[1])}; not overwritten"
                )
        StepTypeLabel.objects.bulk_create(new, batch_size=_BATCH)
        report.created += len(new)


class _ClassifierTarget(_Target):
    def __init__(self, classifier_id: str) -> None:
        self.classifier_id = classifier_id
        self.classifier = StepTypeClassifier.objects.filter(classifier_id=classifier_id).first()
        self.model = self.classifier.model if self.classifier is not None else ""

    def parse(self, data: dict[str, Any], *, in_csv: bool) -> tuple[str, bool | None, bool | None, str, str]:
        holds = _bool(data, "holds", required=False)
        unparsable = _bool(data, "unparsable", required=False)
        if unparsable is True and holds is not None:
            raise InvalidRecord("unparsable", "true, but holds is given")
        if unparsable is False and holds is None:
            raise InvalidRecord("holds", "missing: expected true or false (unparsable is false)")
        raw = data.get("raw_output")
        if raw is not None and not isinstance(raw, str):
            raise InvalidRecord("raw_output", f"expected a string, got {type(raw).__name__}")
        model = _text(data, "model", required=False, max_length=255, in_csv=in_csv)
        return "", holds, None, clean_text(raw or ""), model

    def identity(self, row: _Row) -> tuple[Any, ...]:
        return (row.procedure, row.key)

    def check(self, parsed: _Parsed) -> None:
        if not parsed.model:
            return
        if not self.model:
            self.model = parsed.model
        elif parsed.model != self.model:
            raise InvalidRecord("model", f"{parsed.model!r} is not this classifier's model {self.model!r}")

    def store(self, rows: list[_Row], report: FileReport, path: Path) -> None:
        if not rows:
            return
        if self.classifier is None:
            self.classifier = StepTypeClassifier.objects.create(
                classifier_id=self.classifier_id, model=self.model or self.classifier_id, imported=True
            )
        ids = _candidate_ids({row.procedure for row in rows})
        stored = dict(
            (candidate, (holds, raw))
            for candidate, holds, raw in StepTypePrediction.objects.filter(
                classifier=self.classifier, candidate_id__in=ids.values()
            ).values_list("candidate_id", "holds", "raw_output")
        )
        new = []
        for row in rows:
            candidate = ids[(row.procedure, row.key)]
            earlier = stored.get(candidate)
            if earlier is None:
                new.append(
                    StepTypePrediction(
                        classifier=self.classifier,
                        candidate_id=candidate,
                        holds=row.holds,
                        raw_output=row.raw_output,
                    )
                )
            elif earlier == (row.holds, row.raw_output):
                report.unchanged += 1
            else:
                report.conflicts.append(
                    f"{path}:{row.line}: holds: {row.key} of procedure {row.procedure} is already stored as "
                    f"holds={_word(earlier[0])} with another raw_output; not overwritten"
                )
        StepTypePrediction.objects.bulk_create(new, batch_size=_BATCH)
        report.created += len(new)


# --- services -----------------------------------------------------------------------------------------------


def step_type_labels_import(
    *, path: Path, label_set: str, skip_invalid: bool = False, progress: ImportProgress | None = None
) -> ImportReport:
    """Human labels from one file into the label set `label_set` (created on the first valid row). ValueError
    when the name is not a slug."""
    if not _SLUG.fullmatch(label_set):
        raise ValueError(f"label set name {label_set!r}: letters, digits, - and _ only (at most 64)")
    return _import(path, _LabelSetTarget(label_set, source_file=path.name), skip_invalid, progress)


def step_type_predictions_import(
    *, path: Path, classifier: str, skip_invalid: bool = False, progress: ImportProgress | None = None
) -> ImportReport:
    """A model's predictions from one file as the imported classifier `classifier` (imported=True, created
    on the first valid row). ValueError when a classifier of that id was run by this app."""
    if not _CLASSIFIER.fullmatch(classifier):
        raise ValueError(
            f"classifier name {_shown(classifier)} is not URL-safe: letters, digits, '.', '-' and '_', "
            "beginning with a letter or digit (at most 64)"
        )
    target = _ClassifierTarget(classifier)
    if target.classifier is not None and not target.classifier.imported:
        raise ValueError(
            f"classifier {classifier!r} was run by this app; import predictions under a name of their own"
        )
    return _import(path, target, skip_invalid, progress)


def _import(path: Path, target: _Target, skip_invalid: bool, progress: ImportProgress | None) -> ImportReport:
    progress = progress or ImportProgress()
    size = _size(path)
    progress.start(files_total=1, bytes_total=size)
    file_report = _import_file(path, target, skip_invalid=skip_invalid, progress=progress)
    progress.file_done(path=str(path), ok=file_report.imported, size=size)
    progress.close()
    return ImportReport(files=[file_report])


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _import_file(path: Path, target: _Target, *, skip_invalid: bool, progress: ImportProgress) -> FileReport:
    report = FileReport(path=str(path))
    in_csv = format_of(path) == "csv"
    skipped = 0
    try:
        with transaction.atomic():
            seen: dict[tuple[Any, ...], int] = {}
            for batch in _batches(path, report, progress):
                parsed: list[_Parsed] = []
                for record in batch:
                    row = _parsed(path, record, target, report, in_csv=in_csv)
                    if row == _SKIP:
                        skipped += 1
                    elif isinstance(row, _Parsed):
                        parsed.append(row)
                target.store(_resolved(path, parsed, target, report, seen), report, path)
            report.errors.sort(key=lambda error: _line_of(path, error))
            if report.errors and not skip_invalid:
                raise _RejectFile
    except _RejectFile:
        report.imported = False
        report.created = report.unchanged = report.duplicates = 0
        report.conflicts = []
    if skipped and report.imported:
        report.notes.append(f"{path}: {skipped} attention-check row(s) skipped")
    return report


def _line_of(path: Path, error: str) -> int:
    """The line an error names (errors are found per stage of a batch, then listed in line order)."""
    number = error.removeprefix(f"{path}:").split(":", 1)[0]
    return int(number) if number.isdigit() else 0


def _batches(path: Path, report: FileReport, progress: ImportProgress) -> Iterator[list[Record]]:
    batch: list[Record] = []
    for item in iter_records(path):
        if isinstance(item, ReadError):
            report.errors.append(str(item))
            continue
        batch.append(item)
        if len(batch) >= _BATCH:
            progress.records(len(batch))
            yield batch
            batch = []
    progress.records(len(batch))
    yield batch


def _parsed(
    path: Path, record: Record, target: _Target, report: FileReport, *, in_csv: bool
) -> _Parsed | Literal["skip"] | None:
    """The row checked on its own: None (an error reported) when it is bad, _SKIP for an attention check."""
    data = record.data
    try:
        if _bool(data, "is_attention_check", required=False):
            return _SKIP
        ref = _procedure_ref(data, in_csv=in_csv)
        candidate = _candidate(data)
        annotator, holds, expert, raw_output, model = target.parse(data, in_csv=in_csv)
    except InvalidRecord as exc:
        report.errors.append(f"{path}:{record.line}: {exc.field_name}: {exc.reason}")
        return None
    return _Parsed(record.line, ref, candidate, annotator, holds, expert, raw_output, model)


def _resolved(
    path: Path, rows: list[_Parsed], target: _Target, report: FileReport, seen: dict[tuple[Any, ...], int]
) -> list[_Row]:
    """The rows whose procedure exists, whose candidate it has, and that repeat no earlier row."""
    by_source, by_pk = _procedures(rows)
    valid = []
    for parsed in rows:
        kind, ref = parsed.ref
        found = by_source.get(str(ref)) if kind == "source_example_id" else by_pk.get(int(ref))
        try:
            if found is None:
                raise InvalidRecord(kind, f"no procedure with {kind} {ref!r}")
            pk, n_steps = found
            if parsed.candidate.key not in _keys(n_steps):
                raise InvalidRecord(
                    "candidate", f"{parsed.candidate.key!r} is not a candidate of a {n_steps}-step procedure"
                )
            row = _Row(
                parsed.line,
                pk,
                parsed.candidate.key,
                parsed.annotator,
                parsed.holds,
                parsed.expert,
                parsed.raw_output,
            )
            identity = target.identity(row)
            if identity in seen:
                who = f"{row.annotator!r} on " if row.annotator else ""
                raise InvalidRecord(
                    target.duplicate_field,
                    f"{who}{row.key} of procedure {ref!r} repeats line {seen[identity]}",
                )
            target.check(parsed)
        except InvalidRecord as exc:
            report.errors.append(f"{path}:{parsed.line}: {exc.field_name}: {exc.reason}")
            continue
        seen[identity] = parsed.line
        valid.append(row)
    return valid


def _procedures(rows: list[_Parsed]) -> tuple[dict[str, tuple[int, int]], dict[int, tuple[int, int]]]:
    """(pk, number of steps) of the procedures the rows name, by source_example_id and by pk."""
    sources = {str(ref) for kind, ref in (row.ref for row in rows) if kind == "source_example_id"}
    pks = {int(ref) for kind, ref in (row.ref for row in rows) if kind == "procedure"}
    by_source = {
        source: (pk, _n_steps(steps))
        for pk, source, steps in Procedure.objects.filter(source_example_id__in=sources).values_list(
            "pk", "source_example_id", "steps"
        )
    }
    by_pk = {
        pk: (pk, _n_steps(steps))
        for pk, steps in Procedure.objects.filter(pk__in=pks).values_list("pk", "steps")
    }
    return by_source, by_pk


def _n_steps(steps: Any) -> int:
    return len(steps) if isinstance(steps, list) else 0


@lru_cache(maxsize=256)
def _keys(n_steps: int) -> frozenset[str]:
    return frozenset(candidate.key for candidate in candidates(n_steps))


def _candidate_ids(procedures: set[int]) -> dict[tuple[int, str], int]:
    """(procedure pk, key) -> StepCandidate pk for every candidate of the procedures, creating the rows of a
    procedure that has none (or not all) yet."""
    ids = {
        (procedure, key): pk
        for procedure, key, pk in StepCandidate.objects.filter(procedure_id__in=procedures).values_list(
            "procedure_id", "key", "pk"
        )
    }
    steps = dict(Procedure.objects.filter(pk__in=procedures).values_list("pk", "steps"))
    incomplete = [pk for pk in procedures if any((pk, key) not in ids for key in _keys(_n_steps(steps[pk])))]
    for procedure in Procedure.objects.filter(pk__in=incomplete):
        ids.update({(procedure.pk, c.key): c.pk for c in procedure_candidates(procedure)})
    return ids


# --- fields -------------------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _word(value: bool | None) -> str:
    return "" if value is None else str(value).lower()


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in {"Cc", "Cs"} for ch in text)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _unneutralised(text: str) -> str:
    """A CSV cell as it was before SafeDictWriter put a quote in front of a would-be formula."""
    if text.startswith("'") and text[1:].lstrip(" ").startswith(CSV_FORMULA_STARTS):
        return text[1:]
    return text


def _text(data: dict[str, Any], name: str, *, required: bool, max_length: int, in_csv: bool) -> str:
    value = data.get(name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if _missing(value):
        if required:
            raise InvalidRecord(name, "missing or empty")
        return ""
    if not isinstance(value, str):
        raise InvalidRecord(name, f"expected a string, got {type(value).__name__}")
    text = (_unneutralised(value) if in_csv else value).strip()
    problem = text_problem(text)  # NUL or a lone surrogate: as every importer says it
    if problem is not None:
        raise InvalidRecord(name, problem)
    if _has_control(text):
        raise InvalidRecord(name, f"{_shown(text)} contains a control character")
    if len(text) > max_length:
        raise InvalidRecord(name, f"longer than {max_length} characters")
    if not text and required:
        raise InvalidRecord(name, "missing or empty")
    return text


def _bool(data: dict[str, Any], name: str, *, required: bool) -> bool | None:
    value = data.get(name)
    if isinstance(value, bool):
        return value
    if _missing(value):
        if required:
            raise InvalidRecord(name, "missing: expected true or false")
        return None
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    raise InvalidRecord(name, f"expected true or false, got {_shown(value)}")


def _whole(data: dict[str, Any], name: str, *, minimum: int, maximum: int, what: str) -> int | None:
    value = data.get(name)
    if _missing(value):
        return None
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[0-9]{1,19}", value.strip()):
        number = int(value.strip())
    if number is None or not minimum <= number <= maximum:
        raise InvalidRecord(
            name, f"expected {what} (a whole number from {minimum} to {maximum}), got {_shown(value)}"
        )
    return number


def _procedure_ref(data: dict[str, Any], *, in_csv: bool) -> tuple[str, str | int]:
    source = _text(data, "source_example_id", required=False, max_length=255, in_csv=in_csv)
    if source:
        return ("source_example_id", source)
    pk = _whole(data, "procedure", minimum=1, maximum=_MAX_PK, what="a procedure pk")
    if pk is None:
        raise InvalidRecord("source_example_id", "missing: give source_example_id or procedure (its pk)")
    return ("procedure", pk)


def _step_type(value: Any) -> StepType:
    if isinstance(value, str) and value.strip().lower() in {t.value for t in StepType}:
        return StepType(value.strip().lower())
    raise InvalidRecord("type", f"expected sequential, interchangeable or optional, got {_shown(value)}")


def _candidate(data: dict[str, Any]) -> Candidate:
    """The candidate a row names, by key or by type and step indices (which agree when both are given)."""
    indices = {
        name: _whole(data, name, minimum=0, maximum=_MAX_INDEX, what="a step index")
        for name in ("anchor", "first", "second")
    }
    given_type = None if _missing(data.get("type")) else _step_type(data.get("type"))
    key = data.get("candidate")
    if not _missing(key):
        try:
            if not isinstance(key, str):
                raise ValueError
            candidate = Candidate.from_key(key.strip())
        except ValueError:
            raise InvalidRecord(
                "candidate", f"malformed key {_shown(key)}: expected e.g. {_KEY_EXAMPLES}"
            ) from None
        if given_type is not None and given_type is not candidate.step_type:
            raise InvalidRecord("type", f"{given_type.value!r} does not match candidate {candidate.key!r}")
        second = candidate.steps[1] if len(candidate.steps) > 1 else None
        for name, expected in (
            ("anchor", candidate.anchor),
            ("first", candidate.steps[0]),
            ("second", second),
        ):
            if indices[name] is not None and indices[name] != expected:
                raise InvalidRecord(name, f"{indices[name]} does not match candidate {candidate.key!r}")
        return candidate
    if given_type is None:
        raise InvalidRecord(
            "candidate", "missing: give the candidate key, or type with anchor, first and second"
        )
    first, second = indices["first"], indices["second"]
    if first is None:
        raise InvalidRecord("first", f"missing: a {given_type.value} candidate needs its first step")
    if given_type is StepType.OPTIONAL:
        if second is not None:
            raise InvalidRecord("second", "an optional candidate is one step: leave second empty")
        steps: tuple[int, ...] = (first,)
    elif second is None:
        raise InvalidRecord("second", f"missing: a {given_type.value} candidate is a step pair")
    else:
        steps = (first, second)
    try:
        return Candidate(given_type, indices["anchor"], steps)
    except ValueError:
        anchor = "no anchor" if indices["anchor"] is None else f"anchor {indices['anchor']}"
        raise InvalidRecord(
            "candidate",
            f"{given_type.value} with {anchor} and steps {list(steps)} is not a candidate "
            f"(e.g. {_KEY_EXAMPLES})",
        ) from None
