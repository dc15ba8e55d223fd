"""Labels, agreement and scores of the step-transition-type protocol (SIO paper §4, §6.3, Tables 3 and 6),
on plain data so that every figure can be checked by hand on a small example.

An item is one decision on one procedure: (unit, candidate key), the key as step_types/candidates.py writes
it. A `StepTypeLabel` is one annotator's answer on one item: a participant marks the candidates that
hold, and `labels_from_marks` turns a submission into one label per candidate (unmarked: holds False). An item
an annotator has no label for is missing (they did not submit that procedure); nothing is imputed for it.

Definitions (each function's docstring repeats its own):
- Majority: per item, the strict majority of the labels it has (2 of 3; with k labels, more than k/2); an even
  split is a tie, reported and never broken. The gold label is positive only for a majority that holds (§4:
  "a negative label for the rest of the cases"), so a tie is negative in the gold.
- Expert flag (footnote 4), only for items whose majority holds: among the annotators who marked the item, the
  majority of their expert answers; an even split is "unsure" (with three annotators: the two who marked it
  disagree, exactly the footnote's case).
- Average pairwise Cohen's kappa, per type: for every pair of annotators, kappa on the items of that type
  both labelled; the unweighted mean over the pairs whose kappa is defined.
- Krippendorff's alpha, nominal, per type: annotators x items, NaN where an annotator has no label.
- Contradiction rate, on two bases: among the SEQUENTIAL pairs (s_j, s_j+1) that hold and have an
  INTERCHANGEABLE counterpart (the same two steps at anchor s_j-1, so j >= 1) with a decision, the share whose
  counterpart holds; and the same count over every SEQUENTIAL pair that holds (the paper's base).
- F1 per type, positive class "the type holds", over the gold items of the type (a missing or unparsable
  prediction is a negative one); "All" is the unweighted mean of the three types' P, R and F1 (macro over
  types), which reproduces every row of the paper's Table 3.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar

from annotation.kinds.step_types.candidates import Candidate, StepType, candidates
from h2e_site.stats import Share, wilson_interval
from h2e_site.stats.agreement import PairwiseKappa, average_pairwise_kappa, nominal_alpha, rating_counts
from h2e_site.stats.classification import MacroScores, Scores, macro_f1, scores

__all__ = [
    "ALL",
    "TASK_EXPERT",
    "Agreement",
    "Contradiction",
    "Evaluation",
    "Expert",
    "Item",
    "Majority",
    "StepTypeLabel",
    "TaskExpertLabel",
    "agreement",
    "agreement_table",
    "annotator_ratings",
    "contradiction_rate",
    "evaluate",
    "evaluate_by_topic",
    "expert_flag",
    "f1_per_type",
    "gold_labels",
    "interchangeable_counterpart",
    "krippendorff_alpha",
    "labels_from_marks",
    "majority_labels",
    "pairwise_kappa",
    "per_topic",
    "step_type_of",
    "task_expert_majority",
    "task_ratings",
]

Item = tuple[str, str]  # (unit, candidate key)
ALL = "all"  # the column of every topic together (Tables 3 and 6)
TASK_EXPERT = "task_expert"  # Table 6's "Task-level expert" row
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)  # an item: (unit, candidate key), or a unit for the task-level answer


@dataclass(frozen=True)
class StepTypeLabel:
    """One annotator's answer on one candidate of one procedure: whether it holds and, when it does, whether
    the judgment needs expert/domain knowledge (None: not asked or not answered)."""

    unit: str
    annotator: str
    candidate_key: str
    holds: bool
    expert: bool | None = None
    topic: str | None = None

    @property
    def item(self) -> Item:
        return (self.unit, self.candidate_key)

    @property
    def step_type(self) -> StepType:
        return step_type_of(self.candidate_key)


@dataclass(frozen=True)
class TaskExpertLabel:
    """One annotator's task-level answer: does the procedure need expert/domain knowledge (appendix A.1)?"""

    unit: str
    annotator: str
    expert: bool
    topic: str | None = None


@cache
def step_type_of(candidate_key: str) -> StepType:
    """The type of a candidate key; ValueError for a malformed key."""
    return Candidate.from_key(candidate_key).step_type


def labels_from_marks(
    *, unit: str, annotator: str, n_steps: int, marked: Mapping[str, bool | None], topic: str | None = None
) -> list[StepTypeLabel]:
    """One submission as labels: every candidate of the procedure, holding iff its key is marked, with the
    expert answer given for it (None for unmarked ones). ValueError for a marked key that is not one of the
    procedure's candidates."""
    keys = [candidate.key for candidate in candidates(n_steps)]
    unknown = sorted(set(marked) - set(keys))
    if unknown:
        raise ValueError(f"not candidates of a {n_steps}-step procedure: {', '.join(map(repr, unknown))}")
    return [StepTypeLabel(unit, annotator, key, key in marked, marked.get(key), topic) for key in keys]


def _by_item(labels: Iterable[StepTypeLabel]) -> dict[Item, list[StepTypeLabel]]:
    """Labels grouped by item; ValueError when one annotator labelled one item twice."""
    grouped: dict[Item, list[StepTypeLabel]] = defaultdict(list)
    for label in labels:
        if any(other.annotator == label.annotator for other in grouped[label.item]):
            raise ValueError(f"{label.annotator!r} labelled {label.item} twice")
        grouped[label.item].append(label)
    return dict(grouped)


# --- Majority labels and the expert flag -------------------------------------------------------------------


class Expert(StrEnum):
    """The aggregated expert-knowledge label of a positive item (Table 7: Yes / No / Unsure)."""

    YES = "yes"
    NO = "no"
    UNSURE = "unsure"


@dataclass(frozen=True)
class Majority:
    """The labels one item got: `yes` annotators marked it, `no` did not; the expert flag when it holds."""

    unit: str
    candidate_key: str
    yes: int
    no: int
    expert: Expert | None = None

    @property
    def holds(self) -> bool | None:
        """True / False by strict majority (more than half of the labels); None for a tie."""
        return None if self.yes == self.no else self.yes > self.no

    @property
    def tie(self) -> bool:
        return self.yes == self.no


def expert_flag(labels: Iterable[StepTypeLabel]) -> Expert | None:
    """Footnote 4, for the labels of one item. None unless the item holds by strict majority (the paper
    aggregates expert labels for the positive cases only). Otherwise the annotators who marked it vote with
    their expert answers (an unanswered one does not vote): more yes than no is YES, more no than yes is NO,
    as many of each is UNSURE; None when none of them answered. With three annotators this is the footnote:
    three markers always have a majority, two who disagree give Unsure."""
    labels = list(labels)
    marked = [label for label in labels if label.holds]
    if 2 * len(marked) <= len(labels):
        return None
    yes = sum(1 for label in marked if label.expert is True)
    no = sum(1 for label in marked if label.expert is False)
    if yes == no:
        return Expert.UNSURE if yes else None
    return Expert.YES if yes > no else Expert.NO


def majority_labels(labels: Iterable[StepTypeLabel]) -> dict[Item, Majority]:
    """Every labelled item's majority (ties kept as ties) with its expert flag."""
    return {item: _majority(item, group) for item, group in _by_item(labels).items()}


def _majority(item: Item, group: list[StepTypeLabel]) -> Majority:
    yes = sum(1 for label in group if label.holds)
    return Majority(*item, yes=yes, no=len(group) - yes, expert=expert_flag(group))


def gold_labels(majorities: Mapping[Item, Majority]) -> dict[Item, bool]:
    """The reference labels of §4: positive for a majority that holds, negative for the rest (ties too)."""
    return {item: majority.holds is True for item, majority in majorities.items()}


def task_expert_majority(labels: Iterable[TaskExpertLabel]) -> dict[str, bool | None]:
    """Per procedure, the strict majority of the task-level expert answers; None for a tie."""
    votes: dict[str, list[bool]] = defaultdict(list)
    for answers in task_ratings(labels).values():
        for unit, expert in answers.items():
            votes[unit].append(expert)
    return {unit: _strict_majority(answers) for unit, answers in votes.items()}


def _strict_majority(votes: list[bool]) -> bool | None:
    yes = sum(votes)
    return None if 2 * yes == len(votes) else 2 * yes > len(votes)


# --- Agreement ---------------------------------------------------------------------------------------------


def annotator_ratings(
    labels: Iterable[StepTypeLabel], step_type: StepType | None = None
) -> dict[str, dict[Item, bool]]:
    """annotator -> item -> holds, for the items of one type (every type when step_type is None)."""
    out: dict[str, dict[Item, bool]] = defaultdict(dict)
    for label in labels:
        if step_type is None or label.step_type is step_type:
            if label.item in out[label.annotator]:
                raise ValueError(f"{label.annotator!r} labelled {label.item} twice")
            out[label.annotator][label.item] = label.holds
    return dict(out)


def task_ratings(labels: Iterable[TaskExpertLabel]) -> dict[str, dict[str, bool]]:
    """annotator -> unit -> task-level expert answer."""
    out: dict[str, dict[str, bool]] = defaultdict(dict)
    for label in labels:
        if label.unit in out[label.annotator]:
            raise ValueError(f"{label.annotator!r} answered the task-level question of {label.unit!r} twice")
        out[label.annotator][label.unit] = label.expert
    return dict(out)


def pairwise_kappa(labels: Iterable[StepTypeLabel], step_type: StepType) -> PairwiseKappa:
    """Average pairwise Cohen's kappa on the items of one type (see average_pairwise_kappa)."""
    return average_pairwise_kappa(annotator_ratings(labels, step_type))


def krippendorff_alpha(labels: Iterable[StepTypeLabel], step_type: StepType) -> float | None:
    """Nominal Krippendorff's alpha on the items of one type (h2e_site.stats.agreement.nominal_alpha)."""
    return nominal_alpha(rating_counts(annotator_ratings(labels, step_type))).value


@dataclass(frozen=True)
class Agreement:
    """One cell of Table 6: average pairwise kappa, alpha beside it, the pairs averaged, and the items that
    at least two annotators labelled."""

    kappa: float | None
    alpha: float | None
    pairs: int
    items: int
    kappa_undefined: str = ""  # why kappa is None
    alpha_undefined: str = ""  # why alpha is None


def agreement(ratings: Mapping[str, Mapping[K, bool]]) -> Agreement:
    """Kappa (average pairwise) and alpha (nominal) of one set of ratings."""
    counts: dict[K, int] = defaultdict(int)
    for given in ratings.values():
        for item in given:
            counts[item] += 1
    mean_kappa = average_pairwise_kappa(ratings)
    alpha = nominal_alpha(rating_counts(ratings))
    shared = sum(1 for n in counts.values() if n >= 2)
    return Agreement(
        mean_kappa.kappa, alpha.value, mean_kappa.pairs, shared, mean_kappa.why_undefined, alpha.undefined
    )


def per_topic(rows: Iterable[T], topic: Callable[[T], str | None]) -> dict[str, list[T]]:
    """The rows under ALL, then under each topic in sorted order (a row without a topic is only in ALL)."""
    rows = list(rows)
    topics = sorted({t for row in rows if (t := topic(row)) is not None})
    return {ALL: rows, **{name: [row for row in rows if topic(row) == name] for name in topics}}


def agreement_table(
    labels: Iterable[StepTypeLabel], task_labels: Iterable[TaskExpertLabel] = ()
) -> dict[str, dict[str, Agreement]]:
    """Table 6: rows sequential / interchangeable / optional (and task_expert when task-level answers are
    given), columns ALL then each topic; every cell kappa and alpha on that row's items of that topic."""
    by_topic = per_topic(labels, lambda label: label.topic)
    table = {
        step_type.value: {
            column: agreement(annotator_ratings(rows, step_type)) for column, rows in by_topic.items()
        }
        for step_type in StepType
    }
    task_by_topic = per_topic(task_labels, lambda label: label.topic)
    if task_by_topic[ALL]:
        table[TASK_EXPERT] = {column: agreement(task_ratings(rows)) for column, rows in task_by_topic.items()}
    return table


# --- SEQUENTIAL and INTERCHANGEABLE together ----------------------------------------------------------------


def interchangeable_counterpart(candidate: Candidate) -> Candidate | None:
    """The INTERCHANGEABLE candidate on the same two steps as a SEQUENTIAL pair (s_j, s_j+1): anchor s_j-1;
    None for (s_0, s_1), which no anchor precedes."""
    if candidate.step_type is not StepType.SEQUENTIAL:
        raise ValueError(f"{candidate.key} is not a sequential pair")
    first = candidate.steps[0]
    return Candidate.interchangeable(first - 1) if first >= 1 else None


@dataclass(frozen=True)
class Contradiction:
    """`both`: sequential pairs whose counterpart also holds; `comparable`: sequential pairs that hold and
    whose counterpart has a decision; `sequential`: every sequential pair that holds.

    Two bases, both shown: `of_comparable` = both / comparable (the first pair (s_0, s_1), which has no
    counterpart, and pairs whose counterpart was not decided left out), and `of_sequential` = both /
    sequential (every sequential pair that holds: the paper's base for "9 % are also interchangeable")."""

    both: int
    comparable: int
    sequential: int

    @property
    def of_comparable(self) -> Share:
        return Share(self.both, self.comparable)

    @property
    def of_sequential(self) -> Share:
        return Share(self.both, self.sequential)

    @property
    def rate(self) -> float | None:
        """both / comparable (None when nothing is comparable)."""
        return self.of_comparable.rate

    @property
    def interval(self) -> tuple[float, float] | None:
        """The rate's 95 % Wilson score interval (h2e_site.stats)."""
        return wilson_interval(self.both, self.comparable)

    def as_json(self) -> dict[str, Any]:
        return {
            "sequential_and_interchangeable": self.both,
            "comparable": self.comparable,
            "sequential": self.sequential,
            "rate": self.rate,
            "of_comparable": self.of_comparable.as_json(),
            "of_sequential": self.of_sequential.as_json(),
        }


def contradiction_rate(decisions: Mapping[Item, bool | None]) -> Contradiction:
    """How often a pair is both SEQUENTIAL and INTERCHANGEABLE (§4: 91 % of the sequential pairs are never
    interchangeable; §7: LLMs predict both). decisions: item -> holds (gold labels or a model's
    predictions; None and False do not hold). Over the SEQUENTIAL pairs (s_j, s_j+1) that hold, those whose
    INTERCHANGEABLE counterpart (same two steps, anchor s_j-1, so j >= 1) has a decision are comparable;
    rate = comparable pairs whose counterpart holds / comparable pairs. (s_0, s_1) and pairs whose counterpart
    was not decided are only in `sequential`, so both / sequential is the rate over every sequential pair."""
    both = comparable = sequential = 0
    for (unit, key), holds in decisions.items():
        candidate = Candidate.from_key(key)
        if candidate.step_type is not StepType.SEQUENTIAL or holds is not True:
            continue
        sequential += 1
        counterpart = interchangeable_counterpart(candidate)
        if counterpart is not None and (unit, counterpart.key) in decisions:
            comparable += 1
            both += decisions[(unit, counterpart.key)] is True
    return Contradiction(both, comparable, sequential)


# --- Model scores against the human majority ----------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """One row of Table 3: the scores of each type and "All"."""

    per_type: dict[StepType, Scores]
    all: MacroScores


def f1_per_type(predictions: Mapping[Item, bool | None], gold: Mapping[Item, bool]) -> dict[StepType, Scores]:
    """Scores per type over the gold items of that type (§6.3: averaged across step/step pair instances).
    A gold item without a prediction, or with None (unparsable answer), counts as predicted negative, as the
    paper's parser turns an answer without the output format into an empty one. Predictions for items not in
    gold are ignored."""
    pairs: dict[StepType, list[tuple[bool, bool]]] = {step_type: [] for step_type in StepType}
    for item, holds in gold.items():
        pairs[step_type_of(item[1])].append((predictions.get(item) is True, holds))
    return {step_type: scores(rows) for step_type, rows in pairs.items()}


def evaluate(predictions: Mapping[Item, bool | None], gold: Mapping[Item, bool]) -> Evaluation:
    """Per-type scores and their macro "All" (one row of Table 3)."""
    per_type = f1_per_type(predictions, gold)
    return Evaluation(per_type, macro_f1(per_type))


def evaluate_by_topic(
    predictions: Mapping[Item, bool | None], gold: Mapping[Item, bool], topic_of: Mapping[str, str]
) -> dict[str, Evaluation]:
    """evaluate() over ALL gold items, then over each topic's (Figure 3); topic_of maps unit -> topic, and a
    unit without a topic is only in ALL."""
    by_topic = per_topic(gold.items(), lambda entry: topic_of.get(entry[0][0]))
    return {column: evaluate(predictions, dict(rows)) for column, rows in by_topic.items()}
