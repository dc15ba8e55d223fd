"""Small, closed-form statistics the pages show beside their figures (with a test each against a hand or
library computation): the Wilson score interval of a proportion (h2e_site.stats, re-exported here), and
chance-corrected agreement of two raters on a yes/no label: Cohen's kappa and Gwet's AC1, undefined (None)
by h2e_site.stats' one rule: fewer than 2 items, or a chance agreement of 1; Kendall's tau-b of many
rankings at once (tau_b_rows, for bootstrap intervals: rankings.py, pairwise_figures.py).

A 2 x 2 confusion is a mapping confusion[first rater's label][second rater's label] -> count, the labels
True / False (True = has a critical failure)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from h2e_site.stats import Coefficient, chance_corrected, wilson_interval

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Coefficient",
    "Confusion",
    "ac1",
    "cohen_kappa",
    "gwet_ac1",
    "holm_adjusted",
    "kappa",
    "observed_agreement",
    "tau_b_rows",
    "wilson_interval",
]

Confusion = dict[bool, dict[bool, int]]


def _total(confusion: Confusion) -> int:
    return sum(confusion[a][b] for a in (True, False) for b in (True, False))


def observed_agreement(confusion: Confusion) -> float | None:
    n = _total(confusion)
    return (confusion[True][True] + confusion[False][False]) / n if n else None


def kappa(confusion: Confusion) -> Coefficient:
    """Cohen's kappa of a 2 x 2 confusion: (p_o - p_e) / (1 - p_e), p_e = sum over labels of the two raters'
    marginal shares multiplied; undefined with fewer than 2 units or p_e = 1 (h2e_site.stats' rule)."""
    n = _total(confusion)
    if n == 0:
        return chance_corrected(0.0, 0.0, 0)
    observed = (confusion[True][True] + confusion[False][False]) / n
    expected = sum(
        (confusion[c][True] + confusion[c][False]) / n * (confusion[True][c] + confusion[False][c]) / n
        for c in (True, False)
    )
    return chance_corrected(observed, expected, n)


def cohen_kappa(confusion: Confusion) -> float | None:
    """kappa(confusion)'s value: None when undefined."""
    return kappa(confusion).value


def ac1(confusion: Confusion) -> Coefficient:
    """Gwet's AC1 (Gwet 2008) of a 2 x 2 confusion. Chance agreement is p_e = 2 pi (1 - pi), pi the mean of
    the two raters' shares of True: unlike kappa's, it stays small when one label dominates, so AC1 does not
    collapse on skewed data (the "kappa paradox"); p_e is at most 1/2, so AC1 is undefined only with fewer
    than 2 units (h2e_site.stats' rule)."""
    n = _total(confusion)
    if n == 0:
        return chance_corrected(0.0, 0.0, 0)
    observed = (confusion[True][True] + confusion[False][False]) / n
    first = (confusion[True][True] + confusion[True][False]) / n
    second = (confusion[True][True] + confusion[False][True]) / n
    pi = (first + second) / 2
    return chance_corrected(observed, 2 * pi * (1 - pi), n)


def gwet_ac1(confusion: Confusion) -> float | None:
    """ac1(confusion)'s value: None when undefined."""
    return ac1(confusion).value


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: with the m p-values sorted ascending,
    adjusted_(i) = max over j <= i of min(1, (m - j + 1) p_(j)) (1-based). The same as statsmodels'
    multipletests(method="holm") (tests/judging/test_paired.py checks it), which is not called on the pages
    because it runs a full garbage collection on every call (75 ms)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between x[k] and y[k] for every row k (NaN where a row is constant): the
    concordant-minus-discordant pair count over sqrt(untied pairs in x times untied pairs in y)."""
    import numpy as np

    upper = np.triu_indices(x.shape[1], k=1)
    sx = np.sign(x[:, :, None] - x[:, None, :])[:, upper[0], upper[1]]
    sy = np.sign(y[:, :, None] - y[:, None, :])[:, upper[0], upper[1]]
    denominator = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (sx * sy).sum(axis=1) / denominator, np.nan)
