"""Agreement of raters, chance-corrected, each undefined (None, with the reason) by h2e_site.stats' one rule:
fewer than 2 items, or a chance agreement of 1. One formula each, used by every app:

- `kappa`: Cohen's kappa of two raters over nominal labels (a yes/no label is the 2 x 2 case), from their
  confusion; `average_pairwise_kappa` the unweighted mean of it over every pair of raters;
- `ac1`: Gwet's AC1 of two raters on a yes/no label;
- `nominal_alpha`: Krippendorff's alpha, nominal, of a units x values count matrix (the `krippendorff`
  package), and `nominal_alpha_of_resamples` the same for many bootstrap resamples at once (in numpy).

A confusion is a mapping confusion[first rater's label][second rater's label] -> count; a 2 x 2 one
(`Confusion`) has the labels True / False (True = has a critical failure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, TypeVar

from h2e_site.stats import Coefficient, agreement_undefined, chance_corrected, nominal_chance_agreement

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Confusion",
    "PairwiseKappa",
    "ac1",
    "average_pairwise_kappa",
    "cohen_kappa",
    "confusion_of",
    "gwet_ac1",
    "kappa",
    "nominal_alpha",
    "nominal_alpha_of_resamples",
    "observed_agreement",
    "pairable_units",
    "rating_counts",
    "shared_confusion",
]

L = TypeVar("L", bound=Hashable)  # a label
K = TypeVar("K", bound=Hashable)  # an item
Confusion = dict[bool, dict[bool, int]]


# --- Cohen's kappa and Gwet's AC1 -------------------------------------------------------------------------


def _total(confusion: Mapping[L, Mapping[L, int]]) -> int:
    return sum(count for row in confusion.values() for count in row.values())


def observed_agreement(confusion: Mapping[L, Mapping[L, int]]) -> float | None:
    """The share of items on which the two raters gave the same label (None without an item)."""
    n = _total(confusion)
    return sum(row.get(label, 0) for label, row in confusion.items()) / n if n else None


def kappa(confusion: Mapping[L, Mapping[L, int]]) -> Coefficient:
    """Cohen's kappa of two raters over nominal labels: (p_o - p_e) / (1 - p_e), p_e = sum over labels of the
    two raters' marginal shares multiplied; undefined with fewer than 2 items or p_e = 1 (h2e_site.stats'
    rule). `confusion[a][b]`: the items the first rater labelled a and the second b."""
    n = _total(confusion)
    if n == 0:
        return chance_corrected(0.0, 0.0, 0)
    labels = list(dict.fromkeys([*confusion, *(label for row in confusion.values() for label in row)]))
    observed = sum(confusion.get(c, {}).get(c, 0) for c in labels) / n
    first = {c: sum(confusion.get(c, {}).values()) for c in labels}
    second = {c: sum(row.get(c, 0) for row in confusion.values()) for c in labels}
    expected = sum(first[c] / n * second[c] / n for c in labels)
    return chance_corrected(observed, expected, n)


def cohen_kappa(confusion: Mapping[L, Mapping[L, int]]) -> float | None:
    """kappa(confusion)'s value: None when undefined."""
    return kappa(confusion).value


def confusion_of(pairs: Iterable[tuple[L, L]]) -> dict[L, dict[L, int]]:
    """The confusion of (first rater's label, second rater's label) pairs, one per item."""
    confusion: dict[L, dict[L, int]] = {}
    for (first, second), count in Counter(pairs).items():
        confusion.setdefault(first, {})[second] = count
    return confusion


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


@dataclass(frozen=True)
class PairwiseKappa:
    """The mean kappa, the number of rater pairs it averages, and the pairs left out as undefined."""

    kappa: float | None
    pairs: int
    undefined: int

    @property
    def why_undefined(self) -> str:
        """Why the mean is None ("" when it is not)."""
        if self.kappa is not None:
            return ""
        if not self.undefined:
            return "undefined: no two annotators labelled the same item"
        pairs = f"{self.undefined} annotator pair" + ("s" if self.undefined != 1 else "")
        return (
            f"undefined: κ is undefined for each of the {pairs} (fewer than 2 shared items, or one and "
            "the same label on all of them)"
        )


def shared_confusion(first: Mapping[K, bool], second: Mapping[K, bool]) -> Confusion:
    """confusion[first's label][second's label] over the items both labelled."""
    confusion: Confusion = {True: {True: 0, False: 0}, False: {True: 0, False: 0}}
    for item in first.keys() & second.keys():
        confusion[first[item]][second[item]] += 1
    return confusion


def average_pairwise_kappa(ratings: Mapping[str, Mapping[K, bool]]) -> PairwiseKappa:
    """Average pairwise Cohen's kappa (SIO paper Table 6). For every unordered pair of raters, the items both
    labelled make a 2 x 2 confusion and its kappa. A pair with no item in common is no pair; a pair whose
    kappa is undefined (h2e_site.stats' rule: fewer than 2 shared items, or p_e = 1: both gave one and the
    same label to every shared item) is counted in `undefined` and left out. The result is the unweighted
    mean over the remaining pairs (None when there are none). Missing labels thus only shrink a pair's
    shared items."""
    values: list[float] = []
    undefined = 0
    for a, b in combinations(sorted(ratings), 2):
        confusion = shared_confusion(ratings[a], ratings[b])
        if not any(confusion[x][y] for x in (True, False) for y in (True, False)):
            continue
        value = kappa(confusion).value
        if value is None:
            undefined += 1
        else:
            values.append(value)
    mean = sum(values) / len(values) if values else None
    return PairwiseKappa(mean, len(values), undefined)


# --- Krippendorff's nominal alpha ---------------------------------------------------------------------------


def rating_counts(ratings: Mapping[str, Mapping[K, Hashable]]) -> np.ndarray:
    """The units x values count matrix of raters' labels (rater -> item -> label; an item a rater did not
    label is missing), units and values in sorted order: what nominal_alpha takes."""
    import numpy as np

    items = sorted({item for given in ratings.values() for item in given}, key=repr)
    values = sorted({value for given in ratings.values() for value in given.values()}, key=repr)
    row = {item: i for i, item in enumerate(items)}
    column = {value: j for j, value in enumerate(values)}
    counts = np.zeros((len(items), len(values)))
    for given in ratings.values():
        for item, value in given.items():
            counts[row[item], column[value]] += 1
    return counts


def pairable_units(counts: np.ndarray) -> np.ndarray:
    """The rows (units) of a units x values count matrix with two labels or more: the only ones alpha uses."""
    return counts[counts.sum(axis=1) >= 2]


def nominal_alpha(counts: np.ndarray) -> Coefficient:
    """Krippendorff's alpha, nominal, of a units x values count matrix (the `krippendorff` package's
    value_counts; rating_counts makes one from raters' labels). Units with fewer than two labels carry no
    pairable values and are left out. Undefined by h2e_site.stats' rule, the pairable units being its items
    and Krippendorff's nominal expected agreement its chance agreement: fewer than two pairable units, or a
    single value used throughout (no expected disagreement)."""
    import krippendorff

    pairable = pairable_units(counts)
    why = agreement_undefined(pairable.shape[0], nominal_chance_agreement(pairable.sum(axis=0).tolist()))
    if why:
        return Coefficient(None, pairable.shape[0], why)
    value = krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal")
    return Coefficient(float(value), pairable.shape[0])


def nominal_alpha_of_resamples(counts: np.ndarray, multiplicities: np.ndarray) -> np.ndarray:
    """Nominal alpha of many resamples of the units of a units x values count matrix (every unit pairable),
    a resample given by how many times it takes each unit (a row of `multiplicities`); NaN where undefined.

    A unit with value counts n_c (m of them) adds (n_c n_k - [c = k] n_c) / (m - 1) to the coincidence o_ck;
    alpha = 1 - (n - 1) (n - sum_c o_cc) / (n^2 - sum_c n_c^2) with n_c = sum_k o_ck (Krippendorff 2011)."""
    import numpy as np

    m = counts.sum(axis=1)
    per_unit = counts[:, :, None] * counts[:, None, :] - np.einsum(
        "uc,ck->uck", counts, np.eye(counts.shape[1])
    )
    per_unit /= (m - 1)[:, None, None]
    coincidences = np.einsum("bu,uck->bck", multiplicities, per_unit)
    n_c = coincidences.sum(axis=2)
    n = n_c.sum(axis=1)
    observed = n - np.trace(coincidences, axis1=1, axis2=2)
    expected = n**2 - (n_c**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)
