"""The statistics of a judge probe, pure functions of counts and lists (tested against hand and library
computations in tests/judging/test_probe_stats.py; docs/reference/statistics.md, "Judge probes' figures",
defines them).

Verbose rewrite, on the items scored both times (neither verdict a parse failure), n of them, as a paired
2 x 2 table: `both_pass`, `gained` (the original fails, the rewrite passes), `lost` (the original passes, the
rewrite fails), `both_fail`.
- How2Score change: delta = (gained - lost) / n, the rewrite's pass rate minus the original's.
- Its 95 % interval: Newcombe's hybrid score interval for a difference of paired proportions (Newcombe 1998,
  "Improved confidence intervals for the difference between binomial proportions based on paired data",
  method 10): the Wilson intervals (l1, u1) of the rewrite's pass rate p1 and (l2, u2) of the original's p2,
  combined with phi, the correlation of the two verdicts:
      L = delta - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
      U = delta + sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)
  with phi = C / sqrt(r1 r2 c1 c2) (the margins of the table; 0 when one is 0), where A = both_pass *
  both_fail - gained * lost and C = A - n/2 when A > n/2, 0 when 0 <= A <= n/2, A when A < 0 (Newcombe's
  continuity adjustment of phi). Checked against Fagerland, Lydersen & Laake's published example.
- McNemar's exact test of "the rewrite changes nothing": judging.paired.mcnemar_exact_p(gained, lost).
- Length ratio: per rewritten item, rewrite tokens / original tokens (o200k_base); their mean with the 95 %
  Student t interval, mean +- t(0.975, m - 1) s / sqrt(m) (none with fewer than 2 items).

Deleted step / swapped steps, on the items scored both times: the detection rate, the share of items where
the judge lists more critical failures on the perturbed L2 than on the original, with its 95 % Wilson
interval (h2e_site.stats.wilson_interval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from h2e_site.stats import Share, wilson_interval

from ..paired import mcnemar_exact_p

__all__ = [
    "Detection",
    "MeanInterval",
    "PairedChange",
    "detection",
    "mean_interval",
    "newcombe_paired_interval",
    "paired_change",
]


def newcombe_paired_interval(
    both_pass: int, gained: int, lost: int, both_fail: int
) -> tuple[float, float] | None:
    """Newcombe's method 10 95 % interval of (first pass rate - second pass rate) from a paired table: rows
    the first verdict (pass, fail), columns the second; `gained` passes first only, `lost` second only.
    None over no item."""
    n = both_pass + gained + lost + both_fail
    if n == 0:
        return None
    first, second = both_pass + gained, both_pass + lost
    p1, p2 = first / n, second / n
    l1, u1 = wilson_interval(first, n) or (0.0, 1.0)
    l2, u2 = wilson_interval(second, n) or (0.0, 1.0)
    phi = _phi(both_pass, gained, lost, both_fail)
    delta = p1 - p2
    low = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = delta + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, low), min(1.0, high)


def _phi(both_pass: int, gained: int, lost: int, both_fail: int) -> float:
    n = both_pass + gained + lost + both_fail
    margins = (both_pass + gained) * (lost + both_fail) * (both_pass + lost) * (gained + both_fail)
    if margins == 0:
        return 0.0
    a = both_pass * both_fail - gained * lost
    c = a - n / 2 if a > n / 2 else (0.0 if a >= 0 else a)
    return c / math.sqrt(margins)


@dataclass(frozen=True)
class MeanInterval:
    """A mean over m values with its 95 % Student t interval (None with fewer than 2 values)."""

    mean: float | None
    m: int
    interval: tuple[float, float] | None


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """The mean of `values` and its 95 % t interval (mean +- t(0.975, m - 1) s / sqrt(m))."""
    m = len(values)
    if m == 0:
        return MeanInterval(None, 0, None)
    mean = sum(values) / m
    if m < 2:
        return MeanInterval(mean, m, None)
    from scipy.stats import t

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (m - 1))
    half = float(t.ppf(0.975, m - 1)) * sd / math.sqrt(m)
    return MeanInterval(mean, m, (mean - half, mean + half))


@dataclass(frozen=True)
class PairedChange:
    """The verbose probe's paired How2Score change (module doc)."""

    both_pass: int
    gained: int
    lost: int
    both_fail: int

    @property
    def n(self) -> int:
        return self.both_pass + self.gained + self.lost + self.both_fail

    @property
    def original_score(self) -> float | None:
        return (self.both_pass + self.lost) / self.n if self.n else None

    @property
    def perturbed_score(self) -> float | None:
        return (self.both_pass + self.gained) / self.n if self.n else None

    @property
    def delta(self) -> float | None:
        return (self.gained - self.lost) / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return newcombe_paired_interval(self.both_pass, self.gained, self.lost, self.both_fail)

    @property
    def p_value(self) -> float | None:
        return mcnemar_exact_p(self.gained, self.lost) if self.n else None


def paired_change(pairs: Sequence[tuple[bool, bool]]) -> PairedChange:
    """The table of (original passes, perturbed passes) pairs."""
    count = {(o, p): 0 for o in (True, False) for p in (True, False)}
    for original, perturbed in pairs:
        count[bool(original), bool(perturbed)] += 1
    return PairedChange(count[True, True], count[False, True], count[True, False], count[False, False])


Detection = Share  # how often the judge found more critical failures on the perturbed L2: k of n, Wilson


def detection(pairs: Sequence[tuple[int, int]]) -> Detection:
    """Of (original failures, perturbed failures) pairs, those with more failures on the perturbed L2."""
    return Detection(sum(1 for original, perturbed in pairs if perturbed > original), len(pairs))
