"""Small, closed-form statistics the pages show beside their figures (with a test each against a hand or
library computation): the Wilson score interval of a proportion (h2e_site.stats, re-exported here), and
chance-corrected agreement of two raters on a yes/no label: Cohen's kappa and Gwet's AC1.

A 2 x 2 confusion is a mapping confusion[first rater's label][second rater's label] -> count, the labels
True / False (True = has a critical failure)."""

from __future__ import annotations

from h2e_site.stats import wilson_interval

__all__ = ["Confusion", "cohen_kappa", "gwet_ac1", "holm_adjusted", "observed_agreement", "wilson_interval"]

Confusion = dict[bool, dict[bool, int]]


def _total(confusion: Confusion) -> int:
    return sum(confusion[a][b] for a in (True, False) for b in (True, False))


def observed_agreement(confusion: Confusion) -> float | None:
    n = _total(confusion)
    return (confusion[True][True] + confusion[False][False]) / n if n else None


def cohen_kappa(confusion: Confusion) -> float | None:
    """Cohen's kappa of a 2 x 2 confusion; None when undefined (no units, or chance agreement 1).
    kappa = (p_o - p_e) / (1 - p_e), p_e = sum over labels of the two raters' marginal shares multiplied."""
    n = _total(confusion)
    if n == 0:
        return None
    observed = (confusion[True][True] + confusion[False][False]) / n
    expected = sum(
        (confusion[c][True] + confusion[c][False]) / n * (confusion[True][c] + confusion[False][c]) / n
        for c in (True, False)
    )
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def gwet_ac1(confusion: Confusion) -> float | None:
    """Gwet's AC1 (Gwet 2008) of a 2 x 2 confusion; None without units. Chance agreement is
    p_e = 2 pi (1 - pi), pi the mean of the two raters' shares of True: unlike kappa's, it stays small when
    one label dominates, so AC1 does not collapse on skewed data (the "kappa paradox")."""
    n = _total(confusion)
    if n == 0:
        return None
    observed = (confusion[True][True] + confusion[False][False]) / n
    first = (confusion[True][True] + confusion[True][False]) / n
    second = (confusion[True][True] + confusion[False][True]) / n
    pi = (first + second) / 2
    expected = 2 * pi * (1 - pi)
    return (observed - expected) / (1 - expected)


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
