"""Cross-judge robustness (paper §5.2, figure 5): do two judges rank the generators the same way?

For every pair of judges, the generators both judged are ranked by each judge's How2Score and compared with
Kendall's tau-b (ties in either ranking handled as scipy's default `variant="b"`) and Spearman's rho (ranks
averaged over ties). Scores come from one grouped aggregate (selectors.how2score_leaderboard). A coefficient
is None when it is undefined: fewer than two shared generators, or a judge that gives them all one score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from . import selectors
from .models import Judge


@dataclass(frozen=True)
class RankCorrelation:
    judge_a: str
    judge_b: str
    n_generators: int
    kendall_tau: float | None
    spearman_rho: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_a": self.judge_a,
            "judge_b": self.judge_b,
            "n_generators": self.n_generators,
            "kendall_tau": self.kendall_tau,
            "spearman_rho": self.spearman_rho,
        }


@dataclass(frozen=True)
class JudgeInfo:
    judge_id: str
    model: str
    is_demo_model: bool
    n_generators: int

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "model": self.model,
            "is_demo_model": self.is_demo_model,
            "n_generators": self.n_generators,
        }


@dataclass(frozen=True)
class RankCorrelations:
    judges: list[JudgeInfo]
    pairs: list[RankCorrelation]

    def pair(self, a: str, b: str) -> RankCorrelation | None:
        """The pair of judges a and b, in either order (None for a judge with itself or an unknown one)."""
        for p in self.pairs:
            if {p.judge_a, p.judge_b} == {a, b} and a != b:
                return p
        return None

    def matrix(self) -> list[tuple[JudgeInfo, list[RankCorrelation | None]]]:
        """Rows of the judge x judge matrix (the diagonal is None)."""
        by_key = {(p.judge_a, p.judge_b): p for p in self.pairs}
        by_key.update({(p.judge_b, p.judge_a): p for p in self.pairs})
        return [(a, [by_key.get((a.judge_id, b.judge_id)) for b in self.judges]) for a in self.judges]

    def as_json(self) -> dict[str, Any]:
        return {"judges": [j.as_json() for j in self.judges], "pairs": [p.as_json() for p in self.pairs]}


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def rank_correlation(
    scores_a: Mapping[str, float], scores_b: Mapping[str, float]
) -> tuple[int, float | None, float | None]:
    """(n shared generators, Kendall tau-b, Spearman rho) of two judges' scores per generator."""
    shared = sorted(set(scores_a) & set(scores_b))
    if len(shared) < 2:
        return len(shared), None, None
    a = [scores_a[g] for g in shared]
    b = [scores_b[g] for g in shared]
    if len(set(a)) < 2 or len(set(b)) < 2:  # a constant ranking: both coefficients are undefined
        return len(shared), None, None
    from scipy import stats  # scipy.stats takes ~0.4 s to import: only pages that rank pay it

    tau = stats.kendalltau(a, b).statistic
    rho = stats.spearmanr(a, b).statistic
    return len(shared), _finite(tau), _finite(rho)


def judge_rank_correlations(
    *, strict: bool = False, judge_ids: Iterable[str] | None = None
) -> RankCorrelations:
    """Kendall tau-b and Spearman rho for every pair of judges (judges ordered by model, then judge_id)."""
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    scores: dict[str, dict[str, float]] = {}
    for row in rows:
        value = row.score.strict_how2score if strict else row.score.how2score
        scores.setdefault(row.judge_id, {})[row.generator_id] = value
    judges = [
        JudgeInfo(j.judge_id, j.model, j.is_demo_model, len(scores[j.judge_id]))
        for j in Judge.objects.filter(judge_id__in=list(scores)).by_model()
    ]
    pairs = [
        RankCorrelation(a.judge_id, b.judge_id, *rank_correlation(scores[a.judge_id], scores[b.judge_id]))
        for a, b in combinations(judges, 2)
    ]
    return RankCorrelations(judges=judges, pairs=pairs)


__all__ = ["JudgeInfo", "RankCorrelation", "RankCorrelations", "judge_rank_correlations", "rank_correlation"]
