"""The figures of a pairwise (L2-vs-L2) study, on plain comparison records: pure functions, no models.

A `Comparison` is one answer (a participant's or a judge's) on one item: two L2s of the same goal from two
generators, one shown left. Its outcome is said from the screen ("left", "right", "both_none": both have no
critical failure, "both_fail": both fail equally); `canonical` turns it into the item's orientation, A being
the generator whose id sorts first: "a_better", "b_better", "tie_none", "tie_fail".

- Bradley-Terry strengths (`bradley_terry`): P(i beats j) = exp(s_i) / (exp(s_i) + exp(s_j)), fitted with
  `choix.ilsr_pairwise_dense` on the win matrix (a tie is half a win for each side) with regularisation ALPHA:
  the fit solves, for every generator i, wins_i - sum_j n_ij w_i / (w_i + w_j) = alpha sum_j (w_i - w_j) with
  w = exp(s) scaled to mean 1, which keeps an unbeaten generator's strength finite. Strengths are log-scale,
  mean 0 (the fit and its bootstrap: h2e_site.stats.rankings). Undefined with fewer than two generators or
  when the comparisons do not connect them all. 95 % percentile bootstrap intervals of strength and rank
  (1 = strongest; equal strengths share the better rank) over items: `resamples` draws of the items with
  replacement (seed fixed); resamples whose comparisons do not connect every generator are left out and
  counted out of `samples`.
- Agreement (`human_alpha`, `majorities`, `judge_human_agreement`): Krippendorff's nominal alpha over the four
  canonical outcomes (the `krippendorff` package; undefined by h2e_site.stats' one rule); the human majority
  of an item is the canonical outcome of more than half its human answers, else the item has none (counted,
  never broken); a judge's answers are compared with it (share with Wilson interval, Cohen's kappa over the
  four outcomes), over every answer and over the items whose two orders agree. Share, kappa and alpha are
  h2e_site.stats' (one formula each in the project).
- Position bias (`position_bias`): the share of decisive answers (left or right) that chose the left L2, with
  its Wilson interval and the two-sided exact binomial p-value against 1/2 (scipy.stats.binomtest).
  `flip_rate`: the share of items a judge answered in both orders whose canonical verdict changed.
- Pairwise against pointwise (`pairwise_vs_pointwise`, `ranking_tau`): a generation passes pointwise when it
  has no critical failure (How2Score's verdict); A passes and B fails means A is better. Pairs where both pass
  or both fail carry no pointwise preference and are counted apart. Kendall's tau-b (scipy.stats.kendalltau)
  between the Bradley-Terry strengths and the generators' How2Scores over the same items, with a 95 %
  percentile bootstrap interval over items (rankings.py's conventions: 1,000 resamples, seed 0, undefined
  resamples left out).
Nothing here raises on data: an undefined figure is None with the reason in `undefined`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from h2e_site.stats import Coefficient, Share
from h2e_site.stats.agreement import confusion_of, kappa, nominal_alpha
from h2e_site.stats.rankings import (
    bootstrap_strengths,
    connected,
    fit_strengths,
    percentile_interval,
    ranks,
    resample_weights,
    tau_b_rows,
)

if TYPE_CHECKING:
    import numpy as np

OUTCOMES = ("left", "right", "both_none", "both_fail")
A_BETTER, B_BETTER, TIE_NONE, TIE_FAIL = "a_better", "b_better", "tie_none", "tie_fail"
CANONICAL = (A_BETTER, B_BETTER, TIE_NONE, TIE_FAIL)
ALPHA = 0.01
BOOTSTRAP_SAMPLES = 1000
SEED = 0
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Comparison:
    """One answer on one item; `left` is the generator shown on the left."""

    item: Hashable
    coder: Hashable
    generator_a: str
    generator_b: str
    left: str
    outcome: str

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome: {self.outcome!r} is not one of {', '.join(OUTCOMES)}")
        if self.generator_a == self.generator_b:
            raise ValueError(f"generator_b: {self.generator_b!r} is generator_a too")
        if self.left not in (self.generator_a, self.generator_b):
            raise ValueError(f"left: {self.left!r} is neither {self.generator_a!r} nor {self.generator_b!r}")

    @property
    def pair(self) -> tuple[str, str]:
        """(A, B): the item's two generators in canonical order (sorted)."""
        a, b = sorted((self.generator_a, self.generator_b))
        return a, b

    @property
    def winner(self) -> str | None:
        """The generator chosen (None for a tie)."""
        if self.outcome not in ("left", "right"):
            return None
        right = self.generator_b if self.left == self.generator_a else self.generator_a
        return self.left if self.outcome == "left" else right

    @property
    def canonical(self) -> str:
        if self.outcome == "both_none":
            return TIE_NONE
        if self.outcome == "both_fail":
            return TIE_FAIL
        return A_BETTER if self.winner == self.pair[0] else B_BETTER

    @property
    def a_left(self) -> bool:
        return self.left == self.pair[0]


def _share(k: int, n: int, empty: str) -> Share:
    return Share(k, n, "" if n else f"undefined: {empty}")


def _by_item(records: Iterable[Comparison]) -> dict[Hashable, list[Comparison]]:
    items: dict[Hashable, list[Comparison]] = defaultdict(list)
    for record in records:
        items[record.item].append(record)
    return dict(sorted(items.items(), key=lambda kv: repr(kv[0])))


# --- Bradley-Terry ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Strength:
    generator: str
    strength: float
    rank: int
    low: float | None = None
    high: float | None = None
    rank_low: float | None = None
    rank_high: float | None = None


@dataclass(frozen=True)
class BradleyTerry:
    generators: list[str]
    strengths: list[Strength]  # strongest first; empty when undefined
    win_probability: dict[tuple[str, str], float]  # (i, j) -> P(i beats j)
    n_comparisons: int
    n_items: int
    alpha: float = ALPHA
    samples: int = 0  # bootstrap resamples used
    undefined: str = ""

    def strength(self, generator: str) -> Strength | None:
        return next((s for s in self.strengths if s.generator == generator), None)


def item_wins(records: Sequence[Comparison], generators: list[str]) -> np.ndarray:
    """items x generators x generators: wins[u, i, j] = wins of i over j on item u, a tie half a win each."""
    import numpy as np

    items = _by_item(records)
    column = {g: k for k, g in enumerate(generators)}
    wins = np.zeros((len(items), len(generators), len(generators)))
    for u, answers in enumerate(items.values()):
        for r in answers:
            a, b = column[r.pair[0]], column[r.pair[1]]
            if r.canonical in (TIE_NONE, TIE_FAIL):
                wins[u, a, b] += 0.5
                wins[u, b, a] += 0.5
            else:
                wins[(u, a, b) if r.canonical == A_BETTER else (u, b, a)] += 1
    return wins


def _bt_undefined(generators: list[str], wins: np.ndarray) -> str:
    if len(generators) < 2:
        return f"undefined: {len(generators)} generator compared (at least 2 needed)"
    if not connected(wins.sum(axis=0)):
        return "undefined: the comparisons do not connect every generator"
    return ""


def bradley_terry(
    records: Sequence[Comparison],
    *,
    alpha: float = ALPHA,
    resamples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> BradleyTerry:
    """Bradley-Terry strengths of the generators with bootstrap intervals over items (module docstring)."""
    import numpy as np

    generators = sorted({g for r in records for g in r.pair})
    wins = item_wins(records, generators)
    base = BradleyTerry(generators, [], {}, len(records), wins.shape[0], alpha)
    why = _bt_undefined(generators, wins)
    point = None if why else fit_strengths(wins.sum(axis=0), alpha)
    if point is None:
        return replace(base, undefined=why or "undefined: the Bradley-Terry fit did not converge")
    boot = bootstrap_strengths(wins, resample_weights(wins.shape[0], resamples, seed), alpha, point)
    boot = boot[np.isfinite(boot).all(axis=1)]
    intervals = (
        percentile_interval(boot, CI_LEVEL) + percentile_interval(ranks(boot), CI_LEVEL)
        if boot.size
        else ([None] * len(generators),) * 4
    )
    point_ranks = ranks(point)
    strengths = [
        Strength(g, float(point[k]), int(point_ranks[k]), *(column[k] for column in intervals))
        for k, g in enumerate(generators)
    ]
    strengths.sort(key=lambda s: (-s.strength, s.generator))
    probability = {
        (g, h): float(1 / (1 + math.exp(point[j] - point[i])))
        for i, g in enumerate(generators)
        for j, h in enumerate(generators)
        if i != j
    }
    return replace(base, strengths=strengths, win_probability=probability, samples=int(boot.shape[0]))


# --- agreement on pairs -----------------------------------------------------------------------------------


def outcome_counts(records: Sequence[Comparison]) -> np.ndarray:
    """items x 4 canonical outcomes: how many answers gave each (krippendorff's value_counts)."""
    import numpy as np

    items = _by_item(records)
    counts = np.zeros((len(items), len(CANONICAL)))
    for u, answers in enumerate(items.values()):
        for r in answers:
            counts[u, CANONICAL.index(r.canonical)] += 1
    return counts


def human_alpha(records: Sequence[Comparison]) -> Coefficient:
    """Krippendorff's nominal alpha over the canonical outcomes; items answered once are left out."""
    return nominal_alpha(outcome_counts(records))


def majority(outcomes: Sequence[str]) -> str | None:
    """The canonical outcome given by more than half of the answers; None when none is."""
    for outcome in set(outcomes):
        if 2 * outcomes.count(outcome) > len(outcomes):
            return outcome
    return None


@dataclass(frozen=True)
class Majorities:
    verdicts: dict[Hashable, str]  # item -> majority outcome
    no_majority: list[Hashable] = field(default_factory=list)  # items without one (never broken)


def majorities(records: Sequence[Comparison]) -> Majorities:
    verdicts: dict[Hashable, str] = {}
    none: list[Hashable] = []
    for item, answers in _by_item(records).items():
        verdict = majority([r.canonical for r in answers])
        if verdict is None:
            none.append(item)
        else:
            verdicts[item] = verdict
    return Majorities(verdicts, none)


@dataclass(frozen=True)
class JudgeHumanAgreement:
    answers: Share  # every judge answer (each order) equal to its item's human majority
    consistent: Share  # items whose two orders agree: that verdict equal to the human majority
    kappa: Coefficient  # Cohen's kappa, judge answer vs human majority, over `answers`
    no_majority: int  # judge answers on items without a human majority (left out)
    not_judged: int  # items with a human majority and no judge answer


def judge_human_agreement(human: Sequence[Comparison], judge: Sequence[Comparison]) -> JudgeHumanAgreement:
    """One judge's answers against the human majority of each item."""
    reference = majorities(human)
    pairs = [(r.canonical, reference.verdicts[r.item]) for r in judge if r.item in reference.verdicts]
    consistent = flip_rate(judge).consistent
    agreed = [consistent[item] == v for item, v in reference.verdicts.items() if item in consistent]
    judged = {r.item for r in judge}
    return JudgeHumanAgreement(
        answers=_share(
            sum(a == b for a, b in pairs), len(pairs), "no judge answer on an item with a human majority"
        ),
        consistent=_share(sum(agreed), len(agreed), "no item with a consistent verdict and a human majority"),
        kappa=kappa(confusion_of((b, a) for a, b in pairs)),
        no_majority=sum(r.item not in reference.verdicts for r in judge),
        not_judged=sum(item not in judged for item in reference.verdicts),
    )


# --- position bias --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionBias:
    left: Share  # decisive answers that chose the left L2 (1/2: no bias)
    p_value: float | None  # exact two-sided binomial test against 1/2
    ties: int  # answers that chose neither


def position_bias(records: Sequence[Comparison]) -> PositionBias:
    decisive = [r for r in records if r.outcome in ("left", "right")]
    left = sum(r.outcome == "left" for r in decisive)
    p_value = None
    if decisive:
        from scipy.stats import binomtest

        p_value = float(binomtest(left, len(decisive), 0.5).pvalue)
    share = _share(left, len(decisive), "no decisive answer (every answer is a tie)")
    return PositionBias(share, p_value, len(records) - len(decisive))


@dataclass(frozen=True)
class FlipRate:
    flips: Share  # items answered in both orders whose canonical verdict changed with the order
    consistent: dict[Hashable, str]  # item -> the verdict both orders gave
    one_order: int  # items answered in one order only (left out)


def flip_rate(judge: Sequence[Comparison]) -> FlipRate:
    """One judge's answers: per item, the first answer with A on the left against the first with B there."""
    flips = 0
    consistent: dict[Hashable, str] = {}
    one_order = 0
    for item, answers in _by_item(judge).items():
        a_left = next((r.canonical for r in answers if r.a_left), None)
        b_left = next((r.canonical for r in answers if not r.a_left), None)
        if a_left is None or b_left is None:
            one_order += 1
        elif a_left == b_left:
            consistent[item] = a_left
        else:
            flips += 1
    n = flips + len(consistent)
    return FlipRate(_share(flips, n, "no item answered in both orders"), consistent, one_order)


# --- pairwise against pointwise -----------------------------------------------------------------------------

Pointwise = Mapping[tuple[Hashable, str], bool]  # (item, generator) -> the generation passes (no failure)


def pointwise_preference(record: Comparison, pointwise: Pointwise) -> str | None:
    """A_BETTER / B_BETTER when exactly one generation passes, TIE_NONE both pass, TIE_FAIL both fail; None
    without both verdicts."""
    a, b = (pointwise.get((record.item, g)) for g in record.pair)
    if a is None or b is None:
        return None
    if a == b:
        return TIE_NONE if a else TIE_FAIL
    return A_BETTER if a else B_BETTER


@dataclass(frozen=True)
class PointwiseAgreement:
    agreement: Share  # decisive answers on pairs with a pointwise preference that agree with it
    pairwise_ties: int  # tie answers on pairs with a pointwise preference
    both_pass: int  # answers on pairs without a pointwise preference
    both_fail: int
    missing: int  # answers without both pointwise verdicts


def pairwise_vs_pointwise(records: Sequence[Comparison], pointwise: Pointwise) -> PointwiseAgreement:
    tally: dict[str, int] = defaultdict(int)
    for r in records:
        preference = pointwise_preference(r, pointwise)
        if preference is None:
            tally["missing"] += 1
        elif preference in (TIE_NONE, TIE_FAIL):
            tally[preference] += 1
        elif r.canonical in (TIE_NONE, TIE_FAIL):
            tally["ties"] += 1
        else:
            tally["n"] += 1
            tally["agreed"] += r.canonical == preference
    empty = "no decisive answer on a pair with a pointwise preference"
    return PointwiseAgreement(
        _share(tally["agreed"], tally["n"], empty),
        tally["ties"],
        tally[TIE_NONE],
        tally[TIE_FAIL],
        tally["missing"],
    )


@dataclass(frozen=True)
class RankAgreement:
    n_generators: int
    tau: float | None  # Kendall's tau-b, Bradley-Terry strengths vs How2Scores
    low: float | None = None
    high: float | None = None
    samples: int = 0  # resamples with a defined tau
    undefined: str = ""


def item_passes(records: Sequence[Comparison], pointwise: Pointwise, generators: list[str]) -> np.ndarray:
    """items x generators x 2: (generations passing, generations judged) of each generator on each item."""
    import numpy as np

    column = {g: k for k, g in enumerate(generators)}
    items = _by_item(records)
    counts = np.zeros((len(items), len(generators), 2))
    for u, (item, answers) in enumerate(items.items()):
        for g in answers[0].pair:
            counts[u, column[g]] = (float(pointwise[(item, g)]), 1.0)
    return counts


def ranking_tau(
    records: Sequence[Comparison],
    pointwise: Pointwise,
    *,
    alpha: float = ALPHA,
    resamples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> RankAgreement:
    """Kendall's tau-b between the Bradley-Terry and the How2Score rankings of the generators, both over the
    items whose two generations have pointwise verdicts, with its bootstrap interval over those items."""
    import numpy as np
    from scipy.stats import kendalltau

    kept = [r for r in records if pointwise_preference(r, pointwise) is not None]
    bt = bradley_terry(kept, alpha=alpha, resamples=0)
    generators = bt.generators
    if bt.undefined:
        return RankAgreement(len(generators), None, undefined=bt.undefined)
    passes = item_passes(kept, pointwise, generators)
    scores = passes[:, :, 0].sum(axis=0) / passes[:, :, 1].sum(axis=0)
    strengths = np.array([bt.strength(g).strength for g in generators])  # type: ignore[union-attr]
    if len(set(scores.tolist())) < 2 or len(set(strengths.tolist())) < 2:
        return RankAgreement(
            len(generators), None, undefined="undefined: one ranking puts every generator level"
        )
    tau = float(kendalltau(strengths, scores).statistic)
    weights = resample_weights(passes.shape[0], resamples, seed)
    boot = bootstrap_strengths(item_wins(kept, generators), weights, alpha, strengths)
    resampled = np.einsum("bu,ugk->bgk", weights, passes)
    with np.errstate(divide="ignore", invalid="ignore"):
        taus = tau_b_rows(boot, resampled[:, :, 0] / resampled[:, :, 1])
    taus = taus[np.isfinite(taus)]
    if taus.size == 0:
        return RankAgreement(len(generators), tau)
    low, high = np.percentile(taus, [2.5, 97.5])
    return RankAgreement(len(generators), tau, float(low), float(high), int(taus.size))
