"""A critical-failures study's export: one row per annotation with its evidence, its failures in the judges'
shape (h2e judgment records), so humans and judges compare directly. JSONL and CSV share the rows (the
engine's writers: views/studies.py, selectors.csv_cell)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotation.base.models import Annotation, Study

EXPORT_FIELDS = [
    "study",
    "item",
    "is_attention_check",
    "attention_passed",
    "generation_pk",
    "generator_id",
    "source_example_id",
    "prolific_pid",
    "prolific_session_id",
    "has_failure",
    "n_failures",
    "critical_failures",
    "comments",
    "issued_at",
    "goal_acknowledged_at",
    "step_revealed_at",
    "submitted_at",
    "elapsed_seconds",
    "active_seconds",
    "user_agent",
]


def _export_row(annotation: Annotation) -> dict[str, Any]:
    item = annotation.item
    assert item.generation is not None  # a critical-failures study's item
    return {
        "study": annotation.study.slug,
        "item": item.position,
        "is_attention_check": item.is_attention_check,
        "attention_passed": annotation.attention_passed,
        "generation_pk": item.generation_id,
        "generator_id": item.generation.generator.generator_id,
        "source_example_id": item.generation.procedure.source_example_id,
        "prolific_pid": annotation.participant.prolific_pid,
        "prolific_session_id": annotation.participant.prolific_session_id,
        "has_failure": annotation.has_failure,
        "n_failures": annotation.n_failures,
        # The judges' shape (h2e judgment records), so humans and judges compare directly.
        "critical_failures": [
            {"failure": f.description, "L1_steps": f.l1_steps, "L2_steps": f.l2_steps}
            for f in annotation.failures.all()
        ],
        "comments": annotation.comments,
        "issued_at": annotation.issued_at.isoformat(),
        "goal_acknowledged_at": annotation.goal_acknowledged_at.isoformat(),
        "step_revealed_at": annotation.step_revealed_at,
        "submitted_at": annotation.submitted_at.isoformat(),
        "elapsed_seconds": round(annotation.elapsed_seconds, 3),
        "active_seconds": annotation.active_seconds,
        "user_agent": annotation.user_agent,
    }


def annotations_export(*, study: Study) -> Iterator[dict[str, Any]]:
    """Every annotation of the study with its evidence, one dict per annotation (JSON-ready)."""
    annotations = (
        Annotation.objects.filter(study=study)
        .select_related("study", "participant", "item__generation__generator", "item__generation__procedure")
        .with_failures()
        .order_by("item__position", "submitted_at", "pk")
    )
    for annotation in annotations.iterator(chunk_size=500):
        yield _export_row(annotation)


__all__ = ["EXPORT_FIELDS", "annotations_export"]
