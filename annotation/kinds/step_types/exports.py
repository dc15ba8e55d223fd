"""Step-type labels and predictions as flat rows, one per candidate, and the JSONL / CSV writers.

Unlike the rest of this package these read the database. The shapes are the ones `imports.py` reads back, so
a study's export imported as a label set has the same agreement figures as the study.

Label rows (LABEL_FIELDS), one per candidate per annotator of a step-types study:
    study, procedure (pk), source_example_id, goal, topic, type, candidate (its key), anchor, first, second
    (0-based step indices; empty where the type has none), holds (the label: true / false), expert (expert
    knowledge needed: true / false, empty where not asked), annotator (Prolific PID), task_expert (the
    annotator's task-level answer on the procedure), is_attention_check, submitted_at (ISO 8601).
Prediction rows (PREDICTION_FIELDS), one per candidate a classifier labelled:
    classifier, model, procedure, source_example_id, goal, topic, type, candidate, anchor, first, second,
    holds (true / false; empty when the answer could not be parsed), unparsable (true / false), raw_output.

JSONL writes JSON booleans and null; CSV writes `true` / `false` and an empty cell for null, through
h2e_site.web.SafeDictWriter (a text cell a spreadsheet would run as a formula gets a leading quote, which
the importer takes off again for the identifiers it matches on).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from annotation.base.models import Study, StudyItem
from annotation.kinds.step_types.models import StepTypeClassifier, StepTypeLabel, StepTypePrediction
from h2e_site import web

__all__ = [
    "LABEL_FIELDS",
    "PREDICTION_FIELDS",
    "csv_lines",
    "jsonl_lines",
    "prediction_rows",
    "study_label_rows",
]

_CANDIDATE_FIELDS = ["type", "candidate", "anchor", "first", "second"]
_PROCEDURE_FIELDS = ["procedure", "source_example_id", "goal", "topic"]
LABEL_FIELDS = [
    "study",
    *_PROCEDURE_FIELDS,
    *_CANDIDATE_FIELDS,
    "holds",
    "expert",
    "annotator",
    "task_expert",
    "is_attention_check",
    "submitted_at",
]
PREDICTION_FIELDS = [
    "classifier",
    "model",
    *_PROCEDURE_FIELDS,
    *_CANDIDATE_FIELDS,
    "holds",
    "unparsable",
    "raw_output",
]
_CHUNK = 2000
_PROCEDURE_COLUMNS = (
    "procedure_id",
    "procedure__source_example_id",
    "procedure__goal",
    "procedure__topic__name",
)
_CANDIDATE_COLUMNS = ("step_type", "key", "anchor", "first", "second")


def _candidate_row(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {
        "procedure": values[f"{prefix}procedure_id"],
        "source_example_id": values[f"{prefix}procedure__source_example_id"],
        "goal": values[f"{prefix}procedure__goal"],
        "topic": values[f"{prefix}procedure__topic__name"],
        "type": values[f"{prefix}step_type"],
        "candidate": values[f"{prefix}key"],
        "anchor": values[f"{prefix}anchor"],
        "first": values[f"{prefix}first"],
        "second": values[f"{prefix}second"],
    }


def study_label_rows(study: Study) -> Iterator[dict[str, Any]]:
    """Every StepTypeLabel of the study's annotations (attention checks included and flagged), one row per
    candidate per annotator, in item order, then submission, then candidate order."""
    prefix = "candidate__"
    columns = [prefix + c for c in (*_PROCEDURE_COLUMNS, *_CANDIDATE_COLUMNS)]
    labels = (
        StepTypeLabel.objects.filter(annotation__study=study)
        .order_by(
            "annotation__item__position", "annotation__submitted_at", "annotation_id", "candidate__position"
        )
        .values(
            *columns,
            "annotation__item__is_attention_check",
            "holds",
            "expert",
            "annotator",
            "annotation__answer",
            "annotation__submitted_at",
        )
    )
    for values in labels.iterator(chunk_size=_CHUNK):
        answer = values["annotation__answer"]
        task_expert = answer.get("expert_knowledge") if isinstance(answer, dict) else None
        yield {
            "study": study.slug,
            **_candidate_row(values, prefix),
            "holds": values["holds"],
            "expert": values["expert"],
            "annotator": values["annotator"],
            "task_expert": task_expert if isinstance(task_expert, bool) else None,
            "is_attention_check": values["annotation__item__is_attention_check"],
            "submitted_at": values["annotation__submitted_at"].isoformat(),
        }


def prediction_rows(classifier: StepTypeClassifier, study: Study | None = None) -> Iterator[dict[str, Any]]:
    """The classifier's predictions, one row per candidate (in procedure, then candidate order); with a
    study, only on the procedures of its regular (not attention-check) items."""
    predictions = StepTypePrediction.objects.filter(classifier=classifier)
    if study is not None:
        procedures = StudyItem.objects.filter(study=study).not_attention_checks().values("procedure_id")
        predictions = predictions.filter(candidate__procedure_id__in=procedures)
    prefix = "candidate__"
    columns = [prefix + c for c in (*_PROCEDURE_COLUMNS, *_CANDIDATE_COLUMNS)]
    rows = predictions.order_by("candidate__procedure_id", "candidate__position").values(
        *columns, "holds", "raw_output"
    )
    for values in rows.iterator(chunk_size=_CHUNK):
        yield {
            "classifier": classifier.classifier_id,
            "model": classifier.model,
            **_candidate_row(values, prefix),
            "holds": values["holds"],
            "unparsable": values["holds"] is None,
            "raw_output": values["raw_output"],
        }


# --- writers ------------------------------------------------------------------------------------------------


def jsonl_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """One JSON object per line."""
    for row in rows:
        yield orjson.dumps(row) + b"\n"


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def csv_lines(rows: Iterable[Mapping[str, Any]], fields: list[str]) -> Iterator[str]:
    """The header, then one line per row; formulas neutralised by SafeDictWriter (web.csv_lines)."""
    return web.csv_lines(({name: _csv_cell(row.get(name)) for name in fields} for row in rows), fields)
