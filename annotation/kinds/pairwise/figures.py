"""A pairwise study's figures (the definitions are annotation/kinds/pairwise/comparisons.py's and
docs/reference/statistics.md's): the humans' Bradley-Terry ranking of the generators with bootstrap intervals,
their agreement (Krippendorff's alpha on pairs) and position bias; for each pairwise judge (the study's LLM
twin) its ranking, its agreement with the human majority, its position bias and how often its verdict flips
with the order; for each pointwise judge, how often the humans' pairwise order agrees with its How2Score order
of the same two generations, and Kendall's tau between the two rankings."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from annotation.base.models import Study
from annotation.kinds.pairwise.comparisons import (
    BradleyTerry,
    Comparison,
    FlipRate,
    JudgeHumanAgreement,
    PointwiseAgreement,
    PositionBias,
    RankAgreement,
    bradley_terry,
    flip_rate,
    human_alpha,
    judge_human_agreement,
    majorities,
    pairwise_vs_pointwise,
    position_bias,
    ranking_tau,
)
from annotation.kinds.pairwise.data import (
    human_comparisons,
    judge_comparisons,
    pointwise_verdicts,
    study_pairs,
)
from annotation.kinds.pairwise.models import PairwiseItem
from h2e_site.stats import Coefficient
from judging.models import Judge


@dataclass(frozen=True)
class HumanFigures:
    n_items: int  # regular items with at least one answer
    n_answers: int
    n_majorities: int  # items with a human majority
    ranking: BradleyTerry
    alpha: Coefficient
    position: PositionBias


@dataclass(frozen=True)
class JudgeFigures:
    judge: Judge
    n_answers: int
    ranking: BradleyTerry
    agreement: JudgeHumanAgreement
    position: PositionBias
    flips: FlipRate


@dataclass(frozen=True)
class PointwiseFigures:
    judge: Judge
    agreement: PointwiseAgreement
    tau: RankAgreement


@dataclass(frozen=True)
class StudyFigures:
    study: Study
    n_pairs: int
    humans: HumanFigures
    judges: list[JudgeFigures]
    pointwise: list[PointwiseFigures]


def study_figures(study: Study, *, resamples: int | None = None) -> StudyFigures:
    """Every figure of the study's agreement page (`resamples`: the bootstraps' draws, default 1,000)."""
    extra = {} if resamples is None else {"resamples": resamples}
    pairs = study_pairs(study)
    human = human_comparisons(study)
    humans = HumanFigures(
        n_items=len({r.item for r in human}),
        n_answers=len(human),
        n_majorities=len(majorities(human).verdicts),
        ranking=bradley_terry(human, **extra),
        alpha=human_alpha(human),
        position=position_bias(human),
    )
    judges = [
        JudgeFigures(
            judge,
            len(records),
            bradley_terry(records, **extra),
            judge_human_agreement(human, records),
            position_bias(records),
            flip_rate(records),
        )
        for judge, records in judge_comparisons(pairs).items()
    ]
    return StudyFigures(study, len(pairs), humans, judges, _pointwise(pairs, human, extra))


def _pointwise(
    pairs: list[PairwiseItem], human: list[Comparison], extra: dict[str, int]
) -> list[PointwiseFigures]:
    generation_ids = {g for p in pairs for g in (p.generation_a_id, p.generation_b_id)}
    judges = Judge.objects.filter(judgments__generation_id__in=generation_ids).distinct().order_by("judge_id")
    figures = []
    for judge in judges:
        verdicts = pointwise_verdicts(pairs, judge)
        figures.append(
            PointwiseFigures(
                judge, pairwise_vs_pointwise(human, verdicts), ranking_tau(human, verdicts, **extra)
            )
        )
    return figures


# --- as JSON (the API) -------------------------------------------------------------------------------------


def coefficient_json(coefficient: Coefficient) -> dict[str, Any]:
    return {"value": coefficient.value, "n": coefficient.n, "undefined": coefficient.undefined}


def ranking_json(ranking: BradleyTerry) -> dict[str, Any]:
    return {
        "n_items": ranking.n_items,
        "n_comparisons": ranking.n_comparisons,
        "samples": ranking.samples,
        "undefined": ranking.undefined,
        "strengths": [asdict(s) for s in ranking.strengths],
    }


def position_json(position: PositionBias) -> dict[str, Any]:
    return {"left": position.left.as_json(), "p_value": position.p_value, "ties": position.ties}


def figures_json(figures: StudyFigures) -> dict[str, Any]:
    humans = figures.humans
    return {
        "study": figures.study.slug,
        "n_pairs": figures.n_pairs,
        "humans": {
            "n_items": humans.n_items,
            "n_answers": humans.n_answers,
            "n_majorities": humans.n_majorities,
            "ranking": ranking_json(humans.ranking),
            "alpha": coefficient_json(humans.alpha),
            "position_bias": position_json(humans.position),
        },
        "judges": [
            {
                "judge_id": j.judge.judge_id,
                "n_answers": j.n_answers,
                "ranking": ranking_json(j.ranking),
                "agreement": j.agreement.answers.as_json(),
                "agreement_consistent": j.agreement.consistent.as_json(),
                "kappa": coefficient_json(j.agreement.kappa),
                "position_bias": position_json(j.position),
                "flip_rate": j.flips.flips.as_json(),
                "one_order": j.flips.one_order,
            }
            for j in figures.judges
        ],
        "pointwise": [
            {
                "judge_id": p.judge.judge_id,
                "agreement": p.agreement.agreement.as_json(),
                "pairwise_ties": p.agreement.pairwise_ties,
                "both_pass": p.agreement.both_pass,
                "both_fail": p.agreement.both_fail,
                "missing": p.agreement.missing,
                "tau": {
                    "value": p.tau.tau,
                    "ci_low": p.tau.low,
                    "ci_high": p.tau.high,
                    "n_generators": p.tau.n_generators,
                    "samples": p.tau.samples,
                    "undefined": p.tau.undefined,
                },
            }
            for p in figures.pointwise
        ],
    }
