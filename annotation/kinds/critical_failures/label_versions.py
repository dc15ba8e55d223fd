"""Versions of the human labels, for the figures cached on them (judging/versions.py keeps the cache): a
string read from the rows themselves in one round trip, which changes whenever a label the figure reads is
written, changed or deleted, from a page, a worker or the admin alike.

- `study_labels_version(study)`: a study's "does L2 have a critical failure?" labels (what Dawid-Skene is
  fitted on): their count, the last id, and the sum of the ids of those saying "failure" (a verdict changed
  in place changes it).
- `calibration_version()`: everything the calibrated scores read besides the judgments (judgments_version
  has those): the annotations' labels, the items' counters (which items count), the gold decisions, the
  calibration rounds and the studies, as counts, last ids and sums of the fields read.
"""

from __future__ import annotations

from django.db import connection

from annotation.base.models import Annotation, Study, StudyItem
from annotation.kinds.critical_failures.models import CalibrationRound, GoldEvent


def study_labels_version(study: Study) -> str:
    """Changes with any of the study's critical-failure labels (module docstring)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), max(id), sum(CASE WHEN has_failure THEN id ELSE 0 END) "
            f"FROM {Annotation._meta.db_table} WHERE study_id = %s AND has_failure IS NOT NULL",
            [study.pk],
        )
        return f"{study.pk}:" + ":".join(str(value) for value in cursor.fetchone() or ())


def calibration_version() -> str:
    """Changes with any label, item counter, gold decision, round or study (module docstring)."""
    annotation, item, gold, rounds, study = (
        m._meta.db_table for m in (Annotation, StudyItem, GoldEvent, CalibrationRound, Study)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) || ':' || coalesce(max(id), 0) || ':' "
            f"        || coalesce(sum(CASE WHEN has_failure THEN id ELSE 0 END), 0) FROM {annotation}),"
            f" (SELECT count(*) || ':' || coalesce(max(id), 0) || ':' || coalesce(sum(completed_count), 0)"
            f"        || ':' || coalesce(sum(target_annotations), 0) FROM {item}),"
            f" (SELECT count(*) || ':' || coalesce(max(id), 0) FROM {gold}),"
            f" (SELECT count(*) || ':' || coalesce(max(id), 0) FROM {rounds}),"
            f" (SELECT count(*) || ':' || coalesce(max(id), 0) FROM {study})"
        )
        return "|".join(str(value) for value in cursor.fetchone() or ())


__all__ = ["calibration_version", "study_labels_version"]
