"""Agreement of a study (or of all studies): loads the labels in a handful of queries and computes every
figure the agreement page and `GET /api/agreement/` show (h2e_site/stats/verdicts.py has the definitions).

Humans and judges are read the same way: a verdict (has_failure) and the L1/L2 steps each critical failure
links. Attention-check items are never part of agreement; their scores are reported per annotator. A judge's
parse failures are not verdicts: they are left out of its agreement and counted.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.db.models import QuerySet

from annotation.base.models import AnnotatedFailure, Annotation, Participant, Study
from h2e_site.stats.verdicts import (
    Agreement,
    Interval,
    JudgeAgreement,
    Label,
    binary_alpha,
    bootstrap_alpha_ci,
    by_unit,
    first_failure_alpha,
    human_ceiling,
    judge_agreement,
    label_from_failures,
    leave_one_out,
    majority,
    pooled,
    step_sets_alpha,
)
from judging.models import Judge, Judgment


@dataclass
class AnnotatorFigures:
    participant_id: int
    prolific_pid: str
    study_slug: str
    n_items: int
    median_active_seconds: float | None
    median_elapsed_seconds: float | None
    loo: Agreement
    attention_passed: int = 0
    attention_total: int = 0

    @property
    def attention_score(self) -> float | None:
        return self.attention_passed / self.attention_total if self.attention_total else None


@dataclass
class JudgeFigures:
    judge: Judge
    agreement: JudgeAgreement
    n_parse_failed: int


@dataclass
class StudyAgreement:
    """Every agreement figure of one study (or of several pooled, units then being study x generation)."""

    title: str
    slugs: list[str]
    labels: list[Label]
    alpha_binary: float | None
    ci: Interval
    alpha_first_failure: float | None
    alpha_step_sets: float | None
    annotators: list[AnnotatorFigures]
    judges: list[JudgeFigures] = field(default_factory=list)
    # why each alpha that is None is undefined (h2e_site.stats' rule), by field name
    undefined: dict[str, str] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len({label.unit for label in self.labels})

    @property
    def n_annotators(self) -> int:
        return len({label.coder for label in self.labels})

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def n_human_ties(self) -> int:
        """Items on which the humans split evenly (no majority label)."""
        units = by_unit(self.labels).values()
        return sum(majority(label.has_failure for label in unit) is None for unit in units)

    @property
    def loo_pooled(self) -> Agreement:
        return pooled(annotator.loo for annotator in self.annotators)

    @property
    def loo_range(self) -> tuple[float, float] | None:
        rates = [a.loo.rate for a in self.annotators if a.loo.rate is not None]
        return (min(rates), max(rates)) if rates else None

    @cached_property
    def ceiling(self) -> dict[Hashable, Agreement]:
        """Each annotator's leave-one-out agreement on the items with a human majority only: the ceiling the
        judges' chart sets beside their agreement, which leaves the tied items out too."""
        return human_ceiling(self.labels)

    @property
    def ceiling_pooled(self) -> Agreement:
        return pooled(self.ceiling.values())

    @property
    def ceiling_range(self) -> tuple[float, float] | None:
        rates = [a.rate for a in self.ceiling.values() if a.rate is not None]
        return (min(rates), max(rates)) if rates else None


def study_agreement(*, study: Study, bootstrap_seed: int = 0, with_judges: bool = True) -> StudyAgreement:
    """Agreement of one study: humans among themselves and, with_judges, every judge that judged its L2."""
    return _agreement([study], title=study.title, seed=bootstrap_seed, with_judges=with_judges)


def studies_agreement(*, studies: Iterable[Study], bootstrap_seed: int = 0) -> StudyAgreement:
    """The studies pooled: an item of each study is a unit of its own (study x generation)."""
    chosen = list(studies)
    return _agreement(chosen, title="All studies", seed=bootstrap_seed, with_judges=False)


def _agreement(studies: list[Study], *, title: str, seed: int, with_judges: bool) -> StudyAgreement:
    pooled_units = len(studies) > 1
    annotations = Annotation.objects.filter(study__in=studies)
    labels, rows = _human_labels(annotations.not_attention_checks(), pooled_units)
    loo = leave_one_out(labels)
    annotators = _annotator_figures(studies, rows, loo, annotations.attention_checks())
    alphas = {
        "alpha_binary": binary_alpha(labels),
        "alpha_first_failure": first_failure_alpha(labels),
        "alpha_step_sets": step_sets_alpha(labels),
    }
    result = StudyAgreement(
        title=title,
        slugs=[study.slug for study in studies],
        labels=labels,
        alpha_binary=alphas["alpha_binary"].value,
        ci=bootstrap_alpha_ci(labels, seed=seed),
        alpha_first_failure=alphas["alpha_first_failure"].value,
        alpha_step_sets=alphas["alpha_step_sets"].value,
        annotators=annotators,
        undefined={name: alpha.undefined for name, alpha in alphas.items() if alpha.undefined},
    )
    if with_judges:
        result.judges = _judge_figures(labels)
    return result


def study_labels(study: Study) -> list[Label]:
    """The human labels of one study (attention checks left out), units being generation ids."""
    labels, _ = _human_labels(Annotation.objects.filter(study=study).not_attention_checks(), False)
    return labels


def _human_labels(
    annotations: QuerySet[Annotation], pooled_units: bool
) -> tuple[list[Label], list[dict[str, Any]]]:
    fields = ("participant_id", "study_id", "item__generation_id", "has_failure", "active_seconds")
    values = annotations.order_by("pk").values("pk", "elapsed_seconds", *fields)
    rows: list[dict[str, Any]] = [dict(row) for row in values]
    failures: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
    for annotation_id, l1, l2 in (
        AnnotatedFailure.objects.filter(annotation_id__in=[row["pk"] for row in rows])
        .order_by("annotation_id", "order")
        .values_list("annotation_id", "l1_steps", "l2_steps")
    ):
        failures[annotation_id].append((l1, l2))
    labels = [
        label_from_failures(
            row["participant_id"],
            _unit(row["study_id"], row["item__generation_id"], pooled_units),
            row["has_failure"],
            failures[row["pk"]],
        )
        for row in rows
    ]
    return labels, rows


def _unit(study_id: int, generation_id: int, pooled_units: bool) -> Hashable:
    return (study_id, generation_id) if pooled_units else generation_id


def _annotator_figures(
    studies: list[Study],
    rows: list[dict[str, Any]],
    loo: dict[Hashable, Agreement],
    attention: QuerySet[Annotation],
) -> list[AnnotatorFigures]:
    slugs = {study.pk: study.slug for study in studies}
    participants = (
        Participant.objects.counted().filter(study__in=studies).order_by("study_id", "created_at", "pk")
    )
    by_participant: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_participant[row["participant_id"]].append(row)
    checks: dict[int, list[bool]] = defaultdict(list)
    for participant_id, passed in attention.values_list("participant_id", "attention_passed"):
        checks[participant_id].append(bool(passed))
    figures = []
    for participant in participants.values("pk", "prolific_pid", "study_id"):
        pk = participant["pk"]
        mine = by_participant.get(pk, [])
        if not mine and not checks.get(pk):
            continue  # never submitted anything
        figures.append(
            AnnotatorFigures(
                participant_id=pk,
                prolific_pid=participant["prolific_pid"],
                study_slug=slugs[participant["study_id"]],
                n_items=len(mine),
                median_active_seconds=_median(row["active_seconds"] for row in mine),
                median_elapsed_seconds=_median(row["elapsed_seconds"] for row in mine),
                loo=loo.get(pk, Agreement()),
                attention_passed=sum(checks.get(pk, [])),
                attention_total=len(checks.get(pk, [])),
            )
        )
    return figures


def _median(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _judge_figures(labels: list[Label]) -> list[JudgeFigures]:
    """Every judge that judged any of the study's generations (units are generation ids)."""
    verdicts: dict[int, dict[Hashable, bool]] = defaultdict(dict)
    parse_failed: dict[int, int] = defaultdict(int)
    units = [
        label.unit for label in labels if isinstance(label.unit, int)
    ]  # a single study's: generation ids
    judged = Judgment.objects.filter(generation_id__in=set(units)).values_list(
        "judge_id", "generation_id", "has_failure", "parse_failed"
    )
    for judge_id, generation_id, has_failure, failed in judged:
        if failed:
            parse_failed[judge_id] += 1
        else:
            verdicts[judge_id][generation_id] = has_failure
    judges = Judge.objects.filter(pk__in=set(verdicts) | set(parse_failed)).by_model()
    figures = [
        JudgeFigures(
            judge, judge_agreement(labels, verdicts.get(judge.pk, {})), parse_failed.get(judge.pk, 0)
        )
        for judge in judges
    ]
    return sorted(figures, key=lambda f: -(f.agreement.overall.rate or 0.0))
