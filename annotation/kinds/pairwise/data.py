"""A pairwise study's data: its annotations as comparison records (annotation/kinds/pairwise/comparisons.py's
`Comparison`), the pointwise How2Score verdicts of its generations, and its export rows."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from annotation.base.models import Annotation, Study
from annotation.kinds.pairwise.comparisons import (
    A_BETTER,
    B_BETTER,
    TIE_FAIL,
    TIE_NONE,
    Comparison,
    Pointwise,
)
from annotation.kinds.pairwise.models import PairwiseItem, pair_of
from annotation.kinds.pairwise.verdicts import pairwise_comparisons
from h2e_site.jobs.models import Job
from judging.models import Judge, Judgment
from judging.pairwise_jobs import pairwise_judge_job_create

EXPORT_FIELDS = [
    "study", "item", "is_attention_check", "attention_passed", "source_example_id", "goal",
    "generation_a", "generator_a", "generation_b", "generator_b", "left", "left_generator", "verdict",
    "outcome", "n_failures", "critical_failures", "prolific_pid", "prolific_session_id", "comments",
    "issued_at", "goal_acknowledged_at", "step_revealed_at", "submitted_at", "elapsed_seconds",
    "active_seconds", "user_agent",
]  # fmt: skip
# The canonical outcome (A: the generator whose id sorts first) of a verdict said with A on the left.
_CANONICAL_A_LEFT = {"left": A_BETTER, "right": B_BETTER, "both_none": TIE_NONE, "both_fail": TIE_FAIL}
_SWAPPED = {A_BETTER: B_BETTER, B_BETTER: A_BETTER, TIE_NONE: TIE_NONE, TIE_FAIL: TIE_FAIL}


def canonical_outcome(verdict: str, left: str) -> str:
    """The item's outcome (a_better, b_better, tie_none, tie_fail) of a verdict said on screen ("left",
    "right", "both_none", "both_fail") with generation `left` ("a" or "b") on the left."""
    outcome = _CANONICAL_A_LEFT[verdict]
    return outcome if left == "a" else _SWAPPED[outcome]


def _annotations(study: Study, *, attention_checks: bool | None = False) -> Any:
    annotations = Annotation.objects.filter(study=study).select_related(
        "participant",
        "item__pair__generation_a__generator",
        "item__pair__generation_b__generator",
        "item__pair__generation_a__procedure",
    )
    if attention_checks is not None:
        annotations = annotations.filter(item__is_attention_check=attention_checks)
    return annotations.order_by("item__position", "submitted_at", "pk")


def human_comparisons(study: Study) -> list[Comparison]:
    """Every submitted answer on the study's regular items, one record each (coder: the participant)."""
    return [_comparison(annotation) for annotation in _annotations(study).iterator(chunk_size=500)]


def _comparison(annotation: Annotation) -> Comparison:
    pair: PairwiseItem = pair_of(annotation.item)
    a, b = pair.generation_a.generator.generator_id, pair.generation_b.generator.generator_id
    return Comparison(
        item=annotation.item_id,
        coder=annotation.participant_id,
        generator_a=a,
        generator_b=b,
        left=a if annotation.answer.get("left") == "a" else b,
        outcome=annotation.answer["verdict"],
    )


def study_pairs(study: Study) -> list[PairwiseItem]:
    """The study's regular items' pairs, in position order (with their generations and generators)."""
    return list(
        PairwiseItem.objects.filter(item__study=study, item__is_attention_check=False)
        .select_related("item", "generation_a__generator", "generation_b__generator")
        .order_by("item__position")
    )


def judge_comparisons(pairs: list[PairwiseItem]) -> dict[Judge, list[Comparison]]:
    """Each pairwise judge's readable verdicts on the pairs (both orders), as records of the study's items."""
    items: dict[Sequence[int], Hashable] = {(p.generation_a_id, p.generation_b_id): p.item_id for p in pairs}
    generation_ids = {g for pair in items for g in pair}
    judges = (
        Judge.objects.filter(pairwise_judgments__generation_a_id__in=generation_ids)
        .distinct()
        .order_by("judge_id")
    )
    found = {judge: pairwise_comparisons(judge, items) for judge in judges}
    return {judge: records for judge, records in found.items() if records}


@transaction.atomic
def twin_job_create(study: Study, judge: Judge, created_by: User | None) -> Job:
    """The study's LLM twin: a pairwise judge job asking `judge` about every pair of the study in both
    orders (judging/pairwise_jobs.py), labelled with the study so its page lists it."""
    pairs = [(p.generation_a_id, p.generation_b_id) for p in study_pairs(study)]
    job = pairwise_judge_job_create(pairs, judge=judge, created_by=created_by)
    job.parameters["study"] = study.pk
    job.save(update_fields=["parameters"])
    return job


def pointwise_verdicts(pairs: list[PairwiseItem], judge: Judge) -> Pointwise:
    """(item, generator_id) -> the generation passes How2Score by `judge` (no critical failure), for the
    generations of `pairs` the judge judged without a parse failure."""
    generation_ids = {g for p in pairs for g in (p.generation_a_id, p.generation_b_id)}
    passes = dict(
        Judgment.objects.filter(
            judge=judge, generation_id__in=generation_ids, parse_failed=False
        ).values_list("generation_id", "has_failure")
    )
    verdicts: dict[tuple[Any, str], bool] = {}
    for pair in pairs:
        for generation in (pair.generation_a, pair.generation_b):
            if generation.pk in passes:
                verdicts[(pair.item_id, generation.generator.generator_id)] = not passes[generation.pk]
    return verdicts


def export_rows(study: Study) -> Iterator[dict[str, Any]]:
    """Every annotation of the study (attention checks included, marked), one dict each (JSON-ready)."""
    for annotation in _annotations(study, attention_checks=None).iterator(chunk_size=500):
        yield _export_row(study, annotation)


def _export_row(study: Study, annotation: Annotation) -> dict[str, Any]:
    item, pair = annotation.item, pair_of(annotation.item)
    left = annotation.answer.get("left", "a")
    generators = {
        "a": pair.generation_a.generator.generator_id,
        "b": pair.generation_b.generator.generator_id,
    }
    return {
        "study": study.slug,
        "item": item.position,
        "is_attention_check": item.is_attention_check,
        "attention_passed": annotation.attention_passed,
        "source_example_id": pair.generation_a.procedure.source_example_id,
        "goal": pair.generation_a.procedure.goal,
        "generation_a": pair.generation_a_id,
        "generator_a": generators["a"],
        "generation_b": pair.generation_b_id,
        "generator_b": generators["b"],
        "left": left,
        "left_generator": generators[left],
        "verdict": annotation.answer.get("verdict"),
        "outcome": canonical_outcome(annotation.answer["verdict"], left),
        "n_failures": annotation.n_failures,
        # Each failure in the judges' shape, with the generation ("a" or "b") it is in.
        "critical_failures": [
            {
                "generation": left if f["side"] == "left" else ("b" if left == "a" else "a"),
                "failure": f["description"],
                "L1_steps": f["l1_steps"],
                "L2_steps": f["l2_steps"],
            }
            for f in annotation.answer.get("failures", [])
        ],
        "prolific_pid": annotation.participant.prolific_pid,
        "prolific_session_id": annotation.participant.prolific_session_id,
        "comments": annotation.comments,
        "issued_at": annotation.issued_at.isoformat(),
        "goal_acknowledged_at": annotation.goal_acknowledged_at.isoformat(),
        "step_revealed_at": annotation.step_revealed_at,
        "submitted_at": annotation.submitted_at.isoformat(),
        "elapsed_seconds": round(annotation.elapsed_seconds, 3),
        "active_seconds": annotation.active_seconds,
        "user_agent": annotation.user_agent,
    }
