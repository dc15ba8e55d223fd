"""Cross-judge robustness (paper §5.2, figure 5): do two judges rank the generators the same way?

For every pair of judges, the generators both judged are ranked by each judge's How2Score and compared with
Kendall's tau-b (ties in either ranking handled as scipy's default `variant="b"`) and Spearman's rho (ranks
averaged over ties). Scores come from one grouped aggregate (selectors.how2score_leaderboard). A coefficient
is None when it is undefined: fewer than two shared generators, or a judge that gives them all one score.

Kendall's tau has a 95 % percentile bootstrap interval over examples: 1,000 resamples (fixed seed 0) of the
examples (procedures) with replacement, the same resample for every judge; in each, every judge's How2Score
per generator is recomputed from its verdicts on the resampled examples (paired.load_verdicts) and tau-b
taken between the two judges' scores (computed for all resamples at once, checked against scipy's). Resamples
where tau is undefined are left out; `tau_samples` says how many remained.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

from h2e_site.stats.rankings import tau_b_rows

from . import paired, selectors, versions
from .models import Judge

if TYPE_CHECKING:
    import numpy as np

BOOTSTRAP_SAMPLES = 1000
TauInterval = tuple[float | None, float | None, int]
NO_INTERVAL: TauInterval = (None, None, 0)


@dataclass(frozen=True)
class RankCorrelation:
    judge_a: str
    judge_b: str
    n_generators: int
    kendall_tau: float | None
    spearman_rho: float | None
    tau_ci_low: float | None = None
    tau_ci_high: float | None = None
    tau_samples: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_a": self.judge_a,
            "judge_b": self.judge_b,
            "n_generators": self.n_generators,
            "kendall_tau": self.kendall_tau,
            "kendall_tau_ci_low": self.tau_ci_low,
            "kendall_tau_ci_high": self.tau_ci_high,
            "kendall_tau_bootstrap_samples": self.tau_samples,
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


def _resampled_scores(
    verdicts: paired.Verdicts, weights: np.ndarray, columns: np.ndarray, strict: bool
) -> np.ndarray:
    """(resamples x generators) How2Scores of one judge under example weights (resamples x all examples)."""
    import numpy as np

    w = weights[:, np.searchsorted(columns, verdicts.procedure_pks)].T.astype(float)
    passed = verdicts.passed.astype(float) @ w
    scored = (verdicts.passed | verdicts.failed | (verdicts.unparsed if strict else False)).astype(float) @ w
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scored > 0, passed / scored, 0.0).T


def bootstrap_tau(
    verdicts: dict[str, paired.Verdicts],
    judge_pairs: list[tuple[str, str]],
    *,
    strict: bool = False,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> dict[tuple[str, str], TauInterval]:
    """(judge a, judge b) -> 95 % percentile bootstrap interval of Kendall's tau-b and the resamples used."""
    import numpy as np

    if not verdicts:
        return {}
    columns = np.unique(np.concatenate([v.procedure_pks for v in verdicts.values()]))
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(columns.size, np.full(columns.size, 1 / columns.size), size=samples)
    scores = {judge_id: _resampled_scores(v, weights, columns, strict) for judge_id, v in verdicts.items()}
    result: dict[tuple[str, str], TauInterval] = {}
    for a, b in judge_pairs:
        shared = sorted(set(verdicts[a].generator_ids) & set(verdicts[b].generator_ids))
        if len(shared) < 2:
            result[(a, b)] = NO_INTERVAL
            continue
        x = scores[a][:, [verdicts[a].row(g) for g in shared]]
        y = scores[b][:, [verdicts[b].row(g) for g in shared]]
        taus = tau_b_rows(x, y)
        taus = taus[np.isfinite(taus)]
        if taus.size == 0:
            result[(a, b)] = NO_INTERVAL
            continue
        low, high = np.percentile(taus, [2.5, 97.5])
        result[(a, b)] = (float(low), float(high), int(taus.size))
    return result


def judge_rank_correlations(
    *, strict: bool = False, judge_ids: Iterable[str] | None = None, seed: int = 0
) -> RankCorrelations:
    """Kendall tau-b (with its bootstrap interval) and Spearman rho for every pair of judges (judges ordered
    by model, then judge_id)."""
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    scores: dict[str, dict[str, float]] = {}
    for row in rows:
        value = row.score.strict_how2score if strict else row.score.how2score
        scores.setdefault(row.judge_id, {})[row.generator_id] = value
    judges = [
        JudgeInfo(j.judge_id, j.model, j.is_demo_model, len(scores[j.judge_id]))
        for j in Judge.objects.filter(judge_id__in=list(scores)).by_model()
    ]
    judge_pairs = [(a.judge_id, b.judge_id) for a, b in combinations(judges, 2)]
    version = versions.judgments_version(judge_ids=list(scores), n_judgments=sum(r.score.total for r in rows))
    intervals = (
        versions.cached(
            f"tau:{strict}:{seed}:{judge_pairs}",
            lambda: bootstrap_tau(paired.load_verdicts(list(scores)), judge_pairs, strict=strict, seed=seed),
            version=version,
        )
        if judge_pairs
        else {}
    )
    pairs = [
        RankCorrelation(a, b, *rank_correlation(scores[a], scores[b]), *intervals.get((a, b), NO_INTERVAL))
        for a, b in judge_pairs
    ]
    return RankCorrelations(judges=judges, pairs=pairs)


__all__ = [
    "JudgeInfo",
    "RankCorrelation",
    "RankCorrelations",
    "bootstrap_tau",
    "judge_rank_correlations",
    "rank_correlation",
    "tau_b_rows",
]
