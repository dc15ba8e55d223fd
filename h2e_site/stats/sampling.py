"""Calibration samples (issue #20): which of a generator's examples people label, drawn with known inclusion
probabilities so that the calibrated How2Score (h2e_site/stats/calibration.py) can weight them by 1 / pi.

A **frame** is the list of examples (generation ids) a sample is drawn from, each with a stratum (its topic).
A **design** gives every example of the frame its inclusion probability pi_i for one round; the draw then
takes exactly round(sum pi) examples (systematic PPS over a seeded random order: each example is drawn with
probability exactly pi_i, the size is fixed):

- `uniform`: pi_i = n / N (a simple random sample of n).
- `stratified` (by topic, equal allocation): n_h = n / H per topic, more where a topic has fewer examples
  than its share (its surplus is shared among the others), pi_i = n_h / N_h: every topic gets labels.
- `disagreement` and routing rounds: pi_i proportional to the judge's uncertainty u_i on example i (judges
  that disagree, a verdict that flipped on a re-run: u_i = sqrt(s (1 - s)), s the share of "has failure" among
  the verdicts on it), mixed with the uniform design so that no example's pi is tiny (weights stay bounded):
  pi_i = n (MIX / N + (1 - MIX) u_i / sum u), capped at 1 with the excess spread over the others. Where a
  human label shrinks the interval most is where the judge is least sure (Zrnic & Candes 2024, "Active
  statistical inference": the optimal pi is proportional to the conditional spread of the human label given
  the judge's). **MIX = 0.8**: the optimal pi grows as the *square root* of that spread (where the judges
  agree, the judge is still wrong ~10 % of the time, where they disagree ~45 %: a ratio of ~2 in pi, not
  the ~15 that MIX = 0.2 gave), and the Hajek-weighted estimate's variance also carries the spread of the
  weights; in the routing benchmark (docs/benchmarks.md) MIX = 0.2 made the interval 1.5 times as wide as a
  uniform sample's, MIX = 0.7-0.9 about 2.5 % narrower. With u in {0, 0.5} and a share d of the frame
  disagreeing, pi(disagree) / pi(agree) = 1 + (1 - MIX) / (MIX d): 1.9 at d = 0.28, 6 at d = 0.05.

**Rounds.** A calibration study grows in rounds; every round's probabilities are computed over the whole frame
from judge data only (never from human labels), and rounds are drawn independently. An example already drawn
may be drawn again (it costs nothing: its item exists). So the probability that example i is in the sample
after rounds 1..R is exactly pi_i = 1 - prod_r (1 - pi_ir) (`inclusion_after_rounds`), whatever the rounds'
designs, and the inverse-probability-weighted estimate stays unbiased.

Pure functions of their inputs and a seed: the study builder (annotation) stores every round's pi_ir.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DESIGNS",
    "MIX",
    "Design",
    "Draw",
    "disagreement_probabilities",
    "draw",
    "inclusion_after_rounds",
    "judge_uncertainty",
    "stratified_probabilities",
    "systematic_pps",
    "uniform_probabilities",
]

MIX = 0.8  # the uniform design's share in the disagreement / routing designs (keeps every pi >= MIX n / N)


class Design:
    UNIFORM = "uniform"
    STRATIFIED = "stratified"
    DISAGREEMENT = "disagreement"


DESIGNS: dict[str, str] = {
    Design.UNIFORM: "uniform: a simple random sample",
    Design.STRATIFIED: "stratified by topic: the same number of examples from every topic",
    Design.DISAGREEMENT: "over-sample where judges disagree or flip (probabilities stored)",
}


@dataclass(frozen=True)
class Draw:
    """One round's draw: every frame example's inclusion probability, and the examples drawn."""

    probabilities: dict[int, float]
    drawn: list[int]


def uniform_probabilities(frame: Sequence[int], n: int) -> dict[int, float]:
    """pi_i = min(1, n / N) for every example of the frame."""
    _check_size(frame, n)
    share = min(1.0, n / len(frame))
    return dict.fromkeys(frame, share)


def stratified_probabilities(strata: Mapping[int, Hashable], n: int) -> dict[int, float]:
    """Equal allocation over the strata (example id -> stratum): n_h = n / H, a stratum smaller than its
    share taken whole and its surplus shared among the rest; pi_i = n_h / N_h. Allocations are real numbers
    (the draw rounds the total only): sum pi = min(n, N)."""
    _check_size(list(strata), n)
    members: dict[Hashable, list[int]] = defaultdict(list)
    for example, stratum in strata.items():
        members[stratum].append(example)
    allocation = _equal_allocation({h: len(m) for h, m in members.items()}, float(min(n, len(strata))))
    return {example: allocation[h] / len(m) for h, m in members.items() for example in m}


def _equal_allocation(sizes: Mapping[Hashable, int], n: float) -> dict[Hashable, float]:
    allocation: dict[Hashable, float] = {}
    open_strata = dict(sizes)
    remaining = n
    while open_strata:
        share = remaining / len(open_strata)
        full = {h: size for h, size in open_strata.items() if size <= share}
        if not full:
            allocation.update(dict.fromkeys(open_strata, share))
            break
        for h, size in full.items():
            allocation[h] = float(size)
            remaining -= size
            del open_strata[h]
    return allocation


def judge_uncertainty(verdicts: Sequence[bool]) -> float:
    """u = sqrt(s (1 - s)), s the share of "has failure" among an example's verdicts (several judges, and
    a judgment's previous verdict where it was re-run): 0 where they all agree, 0.5 at an even split."""
    if not verdicts:
        return 0.0
    share = sum(verdicts) / len(verdicts)
    return math.sqrt(share * (1 - share))


def disagreement_probabilities(
    uncertainty: Mapping[int, float], n: int, *, mix: float = MIX
) -> dict[int, float]:
    """pi_i = n (mix / N + (1 - mix) u_i / sum u), capped at 1 with the excess spread in proportion over the
    uncapped examples (module docstring). With no uncertainty anywhere this is the uniform design."""
    frame = list(uncertainty)
    _check_size(frame, n)
    if not 0 <= mix <= 1:
        raise ValueError(f"mix: {mix!r} is not in [0, 1]")
    total_u = sum(uncertainty.values())
    if any(u < 0 for u in uncertainty.values()):
        raise ValueError("uncertainty: values must be >= 0")
    big_n = len(frame)
    scores = {
        i: mix / big_n + (1 - mix) * (u / total_u if total_u > 0 else 1 / big_n)
        for i, u in uncertainty.items()
    }
    return _capped(scores, float(min(n, big_n)))


def _capped(scores: Mapping[int, float], n: float) -> dict[int, float]:
    """pi_i = n * score_i / sum(score), with every pi above 1 set to 1 and the rest rescaled (repeated)."""
    result: dict[int, float] = {}
    open_scores = dict(scores)
    remaining = n
    while open_scores:
        total = sum(open_scores.values())
        over = {i for i, s in open_scores.items() if remaining * s / total >= 1}
        if not over:
            result.update({i: remaining * s / total for i, s in open_scores.items()})
            break
        for i in over:
            result[i] = 1.0
            remaining -= 1
            del open_scores[i]
    return result


def systematic_pps(probabilities: Mapping[int, float], seed: int) -> list[int]:
    """Exactly round(sum pi) examples, example i drawn with probability pi_i: the examples in a seeded random
    order, their cumulative probabilities laid on a line, and the examples under the points u, u + 1, ...
    (u uniform in [0, 1)). The ids drawn, sorted."""
    rng = random.Random(seed)
    order = sorted(probabilities)
    rng.shuffle(order)
    bad = [i for i in order if not 0 <= probabilities[i] <= 1 + 1e-12]
    if bad:
        raise ValueError(f"probability of {bad[0]}: {probabilities[bad[0]]!r} is not in [0, 1]")
    point = rng.random()
    drawn, cumulative = [], 0.0
    for example in order:
        cumulative += probabilities[example]
        while point < cumulative - 1e-12:
            drawn.append(example)
            point += 1.0
    return sorted(set(drawn))


def draw(probabilities: Mapping[int, float], seed: int) -> Draw:
    """A round: its probabilities and the systematic PPS draw from them."""
    return Draw(dict(probabilities), systematic_pps(probabilities, seed))


def inclusion_after_rounds(rounds: Sequence[float]) -> float:
    """1 - prod_r (1 - pi_r): an example's probability of being in the sample after independent rounds."""
    stay_out = 1.0
    for p in rounds:
        stay_out *= 1 - p
    return 1 - stay_out


def _check_size(frame: Sequence[int], n: int) -> None:
    if not frame:
        raise ValueError("the frame has no example to draw from")
    if n < 1:
        raise ValueError(f"sample size: {n!r} must be at least 1")
