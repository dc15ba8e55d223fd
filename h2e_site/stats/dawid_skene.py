"""Aggregation beyond the majority: Dawid and Skene's (1979) estimate of each annotator's confusion matrix and
of each unit's true label, on plain (unit, annotator, label) records, in numpy.

The model: every unit has one true class c, drawn with the class prior p_c; annotator a, shown a unit of class
c, gives label k with probability pi_a[k | c] (their confusion matrix), independently of the other annotators
and of the unit. EM fits p and every pi_a:
- start: each unit's posterior is its share of votes per class (the soft majority vote);
- M-step: p = the mean posterior over units; pi_a[k | c] = the posterior mass of class c over the units a
  labelled k, normalised over k (a label the annotator never gave keeps probability 0; one they gave, at
  least 1e-10);
- E-step: posterior(c | unit) proportional to p_c * prod over the unit's labels of pi_a[label | c];
- stop after MAX_ITERATIONS rounds or when the evidence lower bound per label rises by less than TOLERANCE.
These are crowd-kit's DawidSkene steps, defaults (100 rounds, 1e-5) and bound, so the tests check labels and
posteriors against crowd-kit (a dev dependency: its every release declares transformers, which we do not
want in production for a few dozen lines of numpy).

Figures read from the fit (the page and docs/reference/statistics.md repeat them):
- a unit's Dawid-Skene label is its most probable class (the first in sorted order on an exact tie), with
  that posterior probability;
- an annotator's competence: sum_c p_c pi_a[c | c], the probability that their label on a random unit is the
  true class; chance: sum_c p_c q_a[c] (q_a their share of labels per class), the competence of someone who
  gave the same labels without looking. A spammer's competence is about their chance, a careful annotator's
  near 1;
- the majority: the label of more than half of a unit's labels, else none (an even split or a plurality only
  is never broken); the units where it is none or differs from the Dawid-Skene label are listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_ITERATIONS = 100
TOLERANCE = 1e-5
EPS = 1e-10  # crowd-kit's floor on a given label's probability, a prior and a posterior in the bound


@dataclass(frozen=True)
class CrowdLabel:
    """One annotator's categorical label on one unit."""

    unit: Hashable
    annotator: str
    label: str


@dataclass(frozen=True)
class AnnotatorCompetence:
    annotator: str
    n_labels: int
    competence: float  # sum_c p_c pi[c | c]
    chance: float  # sum_c p_c q[c]: the same labels given without looking

    def as_json(self) -> dict[str, object]:
        return {
            "annotator": self.annotator,
            "n_labels": self.n_labels,
            "competence": self.competence,
            "chance": self.chance,
        }


@dataclass(frozen=True)
class UnitEstimate:
    unit: Hashable
    label: str  # the Dawid-Skene label: the most probable class
    posterior: float  # its posterior probability
    majority: str | None  # the label of more than half the unit's labels; None when no label has that
    votes: tuple[tuple[str, int], ...]  # (label, count), most given first

    @property
    def differs(self) -> bool:
        return self.majority != self.label

    @property
    def n_labels(self) -> int:
        return sum(count for _, count in self.votes)


@dataclass(frozen=True)
class DawidSkene:
    classes: tuple[str, ...]
    priors: tuple[float, ...]  # p_c in the order of `classes`
    annotators: list[AnnotatorCompetence]  # most labels first
    units: list[UnitEstimate]  # in sorted unit order
    iterations: int

    @property
    def differences(self) -> list[UnitEstimate]:
        """The units whose majority is none or differs from the Dawid-Skene label: those with a majority
        first, then the least certain first."""
        return sorted(
            (unit for unit in self.units if unit.differs),
            key=lambda u: (u.majority is None, u.posterior, repr(u.unit)),
        )

    @property
    def n_labels(self) -> int:
        return sum(a.n_labels for a in self.annotators)


@dataclass(frozen=True)
class _Coded:
    """The labels as index arrays: unit, annotator and class of every label."""

    units: list[Hashable]
    annotators: list[str]
    classes: list[str]
    u: np.ndarray
    a: np.ndarray
    y: np.ndarray


def dawid_skene(
    labels: Sequence[CrowdLabel], *, max_iterations: int = MAX_ITERATIONS, tolerance: float = TOLERANCE
) -> DawidSkene:
    """Fit Dawid-Skene by EM from the soft majority vote (see the module's docstring)."""
    import numpy as np

    if not labels:
        return DawidSkene((), (), [], [], 0)
    coded = _code(labels)
    posterior = _vote_shares(coded)
    priors = posterior.mean(axis=0)
    confusion = _m_step(coded, posterior)
    bound = -np.inf
    iterations = 0
    while iterations < max_iterations:
        iterations += 1
        posterior = _e_step(coded, priors, confusion)
        priors = posterior.mean(axis=0)
        confusion = _m_step(coded, posterior)
        new_bound = _lower_bound(coded, posterior, priors, confusion) / len(coded.y)
        if new_bound - bound < tolerance:
            break
        bound = new_bound
    return DawidSkene(
        classes=tuple(coded.classes),
        priors=tuple(float(p) for p in priors),
        annotators=_competences(coded, priors, confusion),
        units=_estimates(coded, posterior),
        iterations=iterations,
    )


def _code(labels: Sequence[CrowdLabel]) -> _Coded:
    import numpy as np

    units = sorted({label.unit for label in labels}, key=repr)
    annotators = sorted({label.annotator for label in labels})
    classes = sorted({label.label for label in labels})

    def index(values: list[Hashable] | list[str], of: list[Hashable]) -> np.ndarray:
        position = {value: i for i, value in enumerate(values)}
        return np.array([position[value] for value in of], dtype=np.intp)

    return _Coded(
        units,
        annotators,
        classes,
        index(units, [label.unit for label in labels]),
        index(annotators, [label.annotator for label in labels]),
        index(classes, [label.label for label in labels]),
    )


def _counts(coded: _Coded) -> np.ndarray:
    """units x classes: how many labels of each class every unit has."""
    import numpy as np

    counts = np.zeros((len(coded.units), len(coded.classes)))
    np.add.at(counts, (coded.u, coded.y), 1.0)
    return counts


def _vote_shares(coded: _Coded) -> np.ndarray:
    counts = _counts(coded)
    return counts / counts.sum(axis=1, keepdims=True)


def _m_step(coded: _Coded, posterior: np.ndarray) -> np.ndarray:
    """annotators x given label x true class: pi_a[k | c], each column (a, :, c) summing to 1 over the
    labels the annotator gave."""
    import numpy as np

    n_annotators, n_classes = len(coded.annotators), len(coded.classes)
    mass = np.zeros((n_annotators, n_classes, n_classes))
    np.add.at(mass, (coded.a, coded.y), posterior[coded.u])
    given = np.zeros((n_annotators, n_classes), dtype=bool)
    given[coded.a, coded.y] = True
    mass = np.where(given[:, :, None], np.maximum(mass, EPS), 0.0)
    return mass / mass.sum(axis=1, keepdims=True)


def _e_step(coded: _Coded, priors: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """units x classes: the posterior of each unit's true class (in log space, scaled before exp)."""
    import numpy as np

    log_likelihood = np.tile(np.log2(np.maximum(priors, EPS)), (len(coded.units), 1))
    np.add.at(log_likelihood, coded.u, np.log2(confusion[coded.a, coded.y]))
    scaled = np.exp2(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


def _lower_bound(coded: _Coded, posterior: np.ndarray, priors: np.ndarray, confusion: np.ndarray) -> float:
    """crowd-kit's evidence lower bound: per label, the expected log of prior times pi_a[label | c] under
    the unit's posterior, plus the posteriors' entropy."""
    import numpy as np

    per_label = np.log(confusion[coded.a, coded.y]) + np.log(np.maximum(priors, EPS))
    expectation = float((posterior[coded.u] * per_label).sum())
    clipped = np.maximum(posterior, EPS)
    return expectation - float((clipped * np.log(clipped)).sum())


def _competences(coded: _Coded, priors: np.ndarray, confusion: np.ndarray) -> list[AnnotatorCompetence]:
    import numpy as np

    n_classes = len(coded.classes)
    given = np.zeros((len(coded.annotators), n_classes))
    np.add.at(given, (coded.a, coded.y), 1.0)
    n_labels = given.sum(axis=1)
    competence = (np.diagonal(confusion, axis1=1, axis2=2) * priors).sum(axis=1)
    chance = (given / n_labels[:, None] * priors).sum(axis=1)
    rows = [
        AnnotatorCompetence(name, int(n_labels[i]), float(competence[i]), float(chance[i]))
        for i, name in enumerate(coded.annotators)
    ]
    return sorted(rows, key=lambda row: (-row.n_labels, row.annotator))


def _estimates(coded: _Coded, posterior: np.ndarray) -> list[UnitEstimate]:
    counts = _counts(coded)
    best = posterior.argmax(axis=1)
    estimates = []
    for i, unit in enumerate(coded.units):
        votes = Counter({coded.classes[c]: int(n) for c, n in enumerate(counts[i]) if n})
        estimates.append(
            UnitEstimate(
                unit=unit,
                label=coded.classes[best[i]],
                posterior=float(posterior[i, best[i]]),
                majority=majority_label(votes),
                votes=tuple(votes.most_common()),
            )
        )
    return estimates


def majority_label(votes: Counter[str]) -> str | None:
    """The label given by more than half of the labels; None when none is (an even split, a plurality)."""
    total = sum(votes.values())
    label, count = votes.most_common(1)[0] if votes else (None, 0)
    return label if 2 * count > total else None
