"""Agreement figures on plain data: Krippendorff's alpha between annotators, leave-one-out agreement with the
others' majority, and a judge's agreement with the human majority (paper §4.3, figure 3).

Everything here works on `Label` rows (who labelled which unit, and what) so that humans and judges are
treated alike and the numbers can be checked by hand on small matrices. Loading them from the database is
the job of each kind's own agreement module (annotation/kinds/<kind>/).

Definitions (the docs repeat them next to each figure):
- alpha_binary: Krippendorff's alpha, nominal, on has_failure, via the `krippendorff` package; units with a
  single label carry no pairable information and are left out by the formula itself (missing labels are fine).
- Every alpha, kappa and AC1 here is undefined (None) by h2e_site.stats' one rule: fewer than 2 items (for
  alpha: pairable units), or a chance agreement of 1 (a single value throughout).
- alpha_first_failure: nominal alpha on where the first failure is: "none" when no critical failure, else the
  earliest L2 step any failure links to ("L2.k"), or "unlocated" when the failures link no L2 step.
- alpha_step_sets: alpha over the set of steps the failures link ({"L1.2", "L2.5", ...}; empty when no
  failure) with the MASI distance (Passonneau 2006): 1 - Jaccard x monotonicity (1 equal, 2/3 subset,
  1/3 overlapping, 0 disjoint). A verdict of failure whose failures link no step (stored before links were
  required) is the set {"unlinked"}, never the empty set of "no failure".
- Majorities: the strict majority of the labels; an even split is a tie, counted and reported, never broken.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from h2e_site.stats import Coefficient, agreement_undefined, nominal_chance_agreement

from .agreement import ac1 as ac1_of
from .agreement import kappa as kappa_of
from .agreement import nominal_alpha, nominal_alpha_of_resamples, pairable_units

if TYPE_CHECKING:
    import numpy as np


NO_FAILURE = "none"
UNLOCATED = "unlocated"
UNLINKED = "unlinked"  # the step set of a failure verdict whose failures link no step
BOOTSTRAP_SAMPLES = 1000
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Label:
    """One coder's verdict on one unit (an item / generation)."""

    coder: Hashable
    unit: Hashable
    has_failure: bool
    l1_steps: frozenset[int] = frozenset()  # every L1 step the failures link
    l2_steps: frozenset[int] = frozenset()
    first_l2_step: int | None = None  # the earliest L2 step any failure links

    @property
    def first_failure(self) -> str:
        if not self.has_failure:
            return NO_FAILURE
        return UNLOCATED if self.first_l2_step is None else f"L2.{self.first_l2_step}"

    @property
    def step_set(self) -> frozenset[str]:
        steps = frozenset({f"L1.{n}" for n in self.l1_steps} | {f"L2.{n}" for n in self.l2_steps})
        return steps if steps or not self.has_failure else frozenset({UNLINKED})


def label_from_failures(
    coder: Hashable,
    unit: Hashable,
    has_failure: bool,
    failures: Iterable[tuple[Sequence[Any], Sequence[Any]]],
) -> Label:
    """A Label from the (L1 steps, L2 steps) of each failure, in the failures' order."""
    l1: set[int] = set()
    l2: set[int] = set()
    for l1_steps, l2_steps in failures:
        l1.update(_ints(l1_steps))
        l2.update(_ints(l2_steps))
    first = min(l2) if l2 else None
    return Label(coder, unit, has_failure, frozenset(l1), frozenset(l2), first)


def _ints(values: Sequence[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


# --- Krippendorff's alpha ---------------------------------------------------------------------------------


def value_counts(labels: Sequence[Label], value: Callable[[Label], Hashable]) -> tuple[np.ndarray, list[Any]]:
    """The units x values count matrix the `krippendorff` package takes, and the values in column order."""
    import numpy as np

    units = sorted({label.unit for label in labels}, key=repr)
    values = sorted({value(label) for label in labels}, key=repr)
    row = {unit: i for i, unit in enumerate(units)}
    column = {v: j for j, v in enumerate(values)}
    counts = np.zeros((len(units), len(values)), dtype=float)
    for label in labels:
        counts[row[label.unit], column[value(label)]] += 1
    return counts, values


def binary_alpha(labels: Sequence[Label]) -> Coefficient:
    counts, _ = value_counts(labels, lambda label: label.has_failure)
    return nominal_alpha(counts)


def first_failure_alpha(labels: Sequence[Label]) -> Coefficient:
    counts, _ = value_counts(labels, lambda label: label.first_failure)
    return nominal_alpha(counts)


def alpha_binary(labels: Sequence[Label]) -> float | None:
    return binary_alpha(labels).value


def alpha_first_failure(labels: Sequence[Label]) -> float | None:
    return first_failure_alpha(labels).value


def masi_distance(a: frozenset[str], b: frozenset[str]) -> float:
    """MASI distance between two sets of linked steps (two empty sets: 0)."""
    if a == b:
        return 0.0
    union = a | b
    jaccard = len(a & b) / len(union)
    monotonicity = 2 / 3 if (a <= b or b <= a) else (1 / 3 if a & b else 0.0)
    return 1.0 - jaccard * monotonicity


def step_sets_alpha(labels: Sequence[Label]) -> Coefficient:
    """Alpha over the linked step sets with the MASI distance (the package's alpha with a custom metric).
    Undefined by the same rule as the nominal alphas: the MASI distance of two different sets is never 0, so
    the expected disagreement is 0 exactly when a single set is used throughout."""
    import krippendorff
    import numpy as np

    counts, sets = value_counts(labels, lambda label: label.step_set)
    pairable = pairable_units(counts)
    why = agreement_undefined(pairable.shape[0], nominal_chance_agreement(pairable.sum(axis=0).tolist()))
    if why:
        return Coefficient(None, pairable.shape[0], why)
    distances = np.array([[masi_distance(a, b) for b in sets] for a in sets])

    def masi(v1: Any, v2: Any, i1: Any, i2: Any, n_v: Any, dtype: Any = np.float64) -> Any:
        return distances[i1, i2].astype(dtype)

    domain = np.arange(len(sets))
    value = krippendorff.alpha(value_counts=pairable, value_domain=domain, level_of_measurement=masi)
    return Coefficient(float(value), pairable.shape[0])


def alpha_step_sets(labels: Sequence[Label]) -> float | None:
    return step_sets_alpha(labels).value


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    samples: int  # bootstrap samples that gave a defined alpha


def bootstrap_alpha_ci(
    labels: Sequence[Label], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = CI_LEVEL
) -> Interval:
    """Percentile bootstrap CI of the binary alpha, resampling units (items) with replacement.

    Every resample's alpha is the package's nominal alpha of the resampled count matrix; it is computed for
    all resamples at once from each unit's coincidences (nominal_alpha_of_resamples, which the tests check
    against the package) so that 1,000 resamples cost milliseconds, not a second."""
    import numpy as np

    counts, _ = value_counts(labels, lambda label: label.has_failure)
    counts = counts[counts.sum(axis=1) >= 2]
    if counts.shape[0] < 2:
        return Interval(None, None, 0)
    rng = np.random.default_rng(seed)
    n_units = counts.shape[0]
    multiplicities = rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=samples)
    alphas = nominal_alpha_of_resamples(counts, multiplicities)
    alphas = alphas[np.isfinite(alphas)]
    if alphas.size == 0:
        return Interval(None, None, 0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(alphas, [tail, 100 - tail])
    return Interval(float(low), float(high), int(alphas.size))


# --- majorities and leave-one-out --------------------------------------------------------------------------


def majority(labels: Iterable[bool]) -> bool | None:
    """The strict majority of boolean labels; None for a tie or no labels."""
    values = list(labels)
    yes = sum(values)
    no = len(values) - yes
    if yes == no:
        return None
    return yes > no


@dataclass
class Agreement:
    """Agreement of one coder's labels with a reference label per unit (a majority), ties kept apart."""

    n: int = 0  # units compared (reference defined)
    agreed: int = 0
    ties: int = 0  # units whose reference was a tie (not compared)

    @property
    def rate(self) -> float | None:
        return self.agreed / self.n if self.n else None

    def add(self, label: bool, reference: bool | None) -> None:
        if reference is None:
            self.ties += 1
            return
        self.n += 1
        self.agreed += label == reference


def by_unit(labels: Iterable[Label]) -> dict[Hashable, list[Label]]:
    units: dict[Hashable, list[Label]] = defaultdict(list)
    for label in labels:
        units[label.unit].append(label)
    return units


def leave_one_out(labels: Sequence[Label]) -> dict[Hashable, Agreement]:
    """Per coder: agreement of each of their labels with the majority of the other coders on that unit.
    A unit labelled by nobody else, or on which the others tie, counts as a tie."""
    result: dict[Hashable, Agreement] = defaultdict(Agreement)
    for unit_labels in by_unit(labels).values():
        for label in unit_labels:
            others = [other.has_failure for other in unit_labels if other.coder != label.coder]
            result[label.coder].add(label.has_failure, majority(others))
    return dict(result)


def majority_units(labels: Iterable[Label]) -> set[Hashable]:
    """The units whose labels have a strict majority (a tie has none)."""
    return {
        unit
        for unit, group in by_unit(labels).items()
        if majority(label.has_failure for label in group) is not None
    }


def human_ceiling(labels: Sequence[Label]) -> dict[Hashable, Agreement]:
    """Leave-one-out agreement on the units with a majority only: the human ceiling set beside a judge,
    whose agreement with the majority leaves the tied units out. (Leaving one annotator out of a 2-2 tie
    leaves a 2-1 majority against them, so counting ties would lower the ceiling for no fault of anyone.)"""
    decided = majority_units(labels)
    return leave_one_out([label for label in labels if label.unit in decided])


def pooled(agreements: Iterable[Agreement]) -> Agreement:
    total = Agreement()
    for agreement in agreements:
        total.n += agreement.n
        total.agreed += agreement.agreed
        total.ties += agreement.ties
    return total


# --- a judge against the human majority -------------------------------------------------------------------


@dataclass
class JudgeAgreement:
    """A judge's labels against the human majority (paper figure 3).

    confusion[h][j]: units whose human majority is h and judge label is j (True = has_failure)."""

    overall: Agreement = field(default_factory=Agreement)
    has_failure: Agreement = field(default_factory=Agreement)  # units the human majority says has_failure
    no_failure: Agreement = field(default_factory=Agreement)
    confusion: dict[bool, dict[bool, int]] = field(
        default_factory=lambda: {True: {True: 0, False: 0}, False: {True: 0, False: 0}}
    )
    n_not_judged: int = 0  # human-labelled units this judge has no usable verdict on

    @property
    def kappa(self) -> Coefficient:
        """Cohen's kappa of the confusion, with why it is undefined when it is."""
        return kappa_of(self.confusion)

    @property
    def ac1(self) -> Coefficient:
        """Gwet's AC1 of the confusion, with why it is undefined when it is."""
        return ac1_of(self.confusion)

    @property
    def cohen_kappa(self) -> float | None:
        return self.kappa.value

    @property
    def gwet_ac1(self) -> float | None:
        return self.ac1.value

    @property
    def cells(self) -> tuple[int, int, int, int]:
        """(both failure, humans failure / judge none, humans none / judge failure, both none)."""
        c = self.confusion
        return c[True][True], c[True][False], c[False][True], c[False][False]


def judge_agreement(human: Sequence[Label], judge: dict[Hashable, bool]) -> JudgeAgreement:
    """`judge`: unit -> the judge's has_failure (parse failures left out by the caller)."""
    result = JudgeAgreement()
    for unit, unit_labels in by_unit(human).items():
        if unit not in judge:
            result.n_not_judged += 1
            continue
        reference = majority(label.has_failure for label in unit_labels)
        verdict = judge[unit]
        result.overall.add(verdict, reference)
        if reference is None:
            continue
        (result.has_failure if reference else result.no_failure).add(verdict, reference)
        result.confusion[reference][verdict] += 1
    return result
