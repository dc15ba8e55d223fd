"""Agreement of a step-types study, or of an imported label set, from the stored StepTypeLabel rows: the
selectors that read them as measures.py's plain labels, and the figures of the agreement page and API.

Every figure is measures.py's, on these labels (its docstrings define them):
- Table 6: average pairwise Cohen's kappa with nominal Krippendorff's alpha beside it, rows sequential /
  interchangeable / optional / task-level expert, columns "all" then each topic;
- per candidate, the majority of its labels (2 of 3; more than half for any k, an even split a tie, reported
  and never broken) and, where it holds, the expert flag with Unsure (footnote 4); counted per type;
- the SEQUENTIAL pairs that hold (majority) whose INTERCHANGEABLE counterpart also holds, on two bases with
  their Wilson intervals: of every sequential pair (the paper's base) and of the comparable ones (a
  counterpart decided, so never the first pair);
- every kappa and alpha with why it is undefined when it is (h2e_site.stats' one rule);
- each participant's attention checks passed (a study only).
A study's labels are those of its regular items (attention checks never enter agreement); a unit is a
procedure (its pk), so a label set imported from the study's export gives the same figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q

from annotation.base.models import Annotation, Participant, Study
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.measures import (
    ALL,
    TASK_EXPERT,
    Agreement,
    Contradiction,
    Expert,
    Item,
    Majority,
    StepTypeLabel,
    TaskExpertLabel,
    agreement_table,
    contradiction_rate,
    gold_labels,
    majority_labels,
    step_type_of,
)
from annotation.kinds.step_types.models import StepTypeLabel as StoredLabel
from annotation.kinds.step_types.models import StepTypeLabelSet

__all__ = [
    "ROW_TITLES",
    "AttentionScore",
    "StepTypesAgreement",
    "TableRow",
    "TiedCandidate",
    "TypeCounts",
    "label_set_agreement",
    "label_set_labels",
    "step_types_agreement",
    "study_attention_scores",
    "study_labels",
    "study_step_types_agreement",
]

ROW_TITLES = {
    StepType.SEQUENTIAL.value: "Sequential",
    StepType.INTERCHANGEABLE.value: "Interchangeable",
    StepType.OPTIONAL.value: "Optional",
    TASK_EXPERT: "Task-level expert",
}


@dataclass(frozen=True)
class TypeCounts:
    """The majority labels of one type: candidates with a label, how many hold, do not, tie; and the expert
    flags of those that hold."""

    step_type: str
    candidates: int
    positives: int
    negatives: int
    ties: int
    expert_yes: int
    expert_no: int
    unsure: int

    @property
    def title(self) -> str:
        return ROW_TITLES[self.step_type]


@dataclass(frozen=True)
class AttentionScore:
    """One participant's attention checks: passed of total (rate None when they had none)."""

    prolific_pid: str
    items: int
    passed: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


@dataclass(frozen=True)
class TableRow:
    """One row of Table 6 as the page lays it out: a cell per column (None where the row has no labels)."""

    key: str
    title: str
    cells: list[Agreement | None]


@dataclass(frozen=True)
class TiedCandidate:
    procedure: int
    source_example_id: str
    candidate: str
    yes: int
    no: int


@dataclass(frozen=True)
class StepTypesAgreement:
    table: dict[str, dict[str, Agreement]]
    columns: list[str]
    counts: list[TypeCounts]
    majorities: dict[Item, Majority]
    contradiction: Contradiction
    n_procedures: int
    n_annotators: int
    n_labels: int
    sources: dict[str, str] = field(default_factory=dict)  # unit -> source_example_id
    attention: list[AttentionScore] = field(default_factory=list)

    @property
    def rows(self) -> list[TableRow]:
        """Table 6's rows in the paper's order, each with a cell per column."""
        return [
            TableRow(key, ROW_TITLES[key], [self.table[key].get(column) for column in self.columns])
            for key in ROW_TITLES
            if key in self.table
        ]

    @property
    def ties(self) -> list[TiedCandidate]:
        """The candidates whose labels split evenly, in procedure then key order."""
        tied = sorted(
            (m for m in self.majorities.values() if m.tie), key=lambda m: (int(m.unit), m.candidate_key)
        )
        return [
            TiedCandidate(int(m.unit), self.sources.get(m.unit, ""), m.candidate_key, m.yes, m.no)
            for m in tied
        ]

    def as_json(self) -> dict[str, Any]:
        def cell(value: Agreement | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return {
                "kappa": value.kappa,
                "alpha": value.alpha,
                "pairs": value.pairs,
                "items": value.items,
                "kappa_undefined": value.kappa_undefined,
                "alpha_undefined": value.alpha_undefined,
            }

        return {
            "n_procedures": self.n_procedures,
            "n_annotators": self.n_annotators,
            "n_labels": self.n_labels,
            "columns": self.columns,
            "table": {
                row.key: dict(zip(self.columns, map(cell, row.cells), strict=True)) for row in self.rows
            },
            "counts": {
                c.step_type: {
                    "candidates": c.candidates,
                    "positives": c.positives,
                    "negatives": c.negatives,
                    "ties": c.ties,
                    "expert_yes": c.expert_yes,
                    "expert_no": c.expert_no,
                    "unsure": c.unsure,
                }
                for c in self.counts
            },
            "contradiction": self.contradiction.as_json(),
            "attention": [
                {
                    "prolific_pid": a.prolific_pid,
                    "items": a.items,
                    "passed": a.passed,
                    "total": a.total,
                    "rate": a.rate,
                }
                for a in self.attention
            ],
            "majorities": [
                {
                    "procedure": int(m.unit),
                    "source_example_id": self.sources.get(m.unit, ""),
                    "candidate": m.candidate_key,
                    "type": step_type_of(m.candidate_key).value,
                    "yes": m.yes,
                    "no": m.no,
                    "holds": m.holds,
                    "expert": None if m.expert is None else m.expert.value,
                }
                for m in sorted(self.majorities.values(), key=lambda m: (int(m.unit), m.candidate_key))
            ],
        }


def step_types_agreement(
    labels: list[StepTypeLabel],
    task_labels: Iterable[TaskExpertLabel] = (),
    *,
    sources: dict[str, str] | None = None,
    attention: list[AttentionScore] | None = None,
) -> StepTypesAgreement:
    """Every figure of the page from plain labels (units are procedure pks as strings)."""
    task_labels = list(task_labels)
    table = agreement_table(labels, task_labels)
    columns = [ALL, *sorted({column for row in table.values() for column in row} - {ALL})]
    majorities = majority_labels(labels)
    return StepTypesAgreement(
        table=table,
        columns=columns,
        counts=_counts(majorities),
        majorities=majorities,
        contradiction=contradiction_rate(gold_labels(majorities)),
        n_procedures=len({label.unit for label in labels} | {label.unit for label in task_labels}),
        n_annotators=len({label.annotator for label in labels} | {label.annotator for label in task_labels}),
        n_labels=len(labels),
        sources=sources or {},
        attention=attention or [],
    )


def _counts(majorities: dict[Item, Majority]) -> list[TypeCounts]:
    tally: dict[StepType, Counter[str]] = {step_type: Counter() for step_type in StepType}
    for (_, key), majority in majorities.items():
        counter = tally[step_type_of(key)]
        counter["candidates"] += 1
        counter["ties" if majority.tie else "positives" if majority.holds else "negatives"] += 1
        if majority.expert is not None:
            counter[majority.expert.value] += 1
    return [
        TypeCounts(
            step_type.value,
            counter["candidates"],
            counter["positives"],
            counter["negatives"],
            counter["ties"],
            counter[Expert.YES.value],
            counter[Expert.NO.value],
            counter[Expert.UNSURE.value],
        )
        for step_type, counter in tally.items()
    ]


# --- selectors ----------------------------------------------------------------------------------------------


_LABEL_COLUMNS = (
    "candidate__procedure_id",
    "candidate__procedure__source_example_id",
    "candidate__procedure__topic__name",
    "candidate__key",
    "annotator",
    "holds",
    "expert",
)


def _plain(rows: Any) -> tuple[list[StepTypeLabel], dict[str, str]]:
    labels, sources = [], {}
    for procedure, source, topic, key, annotator, holds, expert in rows.values_list(*_LABEL_COLUMNS):
        unit = str(procedure)
        sources[unit] = source
        labels.append(StepTypeLabel(unit, annotator, key, holds, expert, topic))
    return labels, sources


def study_labels(*, study: Study) -> tuple[list[StepTypeLabel], list[TaskExpertLabel], dict[str, str]]:
    """The study's labels on its regular items, its participants' task-level answers (an answer that is not
    a boolean is no answer), and each procedure's source_example_id."""
    rows = StoredLabel.objects.filter(annotation__study=study, annotation__item__is_attention_check=False)
    labels, sources = _plain(rows)
    answers = (
        Annotation.objects.filter(study=study)
        .not_attention_checks()
        .values_list(
            "item__procedure_id", "participant__prolific_pid", "answer", "item__procedure__topic__name"
        )
    )
    task_labels = [
        TaskExpertLabel(str(procedure), pid, answer["expert_knowledge"], topic)
        for procedure, pid, answer, topic in answers
        if procedure is not None
        and isinstance(answer, dict)
        and isinstance(answer.get("expert_knowledge"), bool)
    ]
    return labels, task_labels, sources


def label_set_labels(*, label_set: StepTypeLabelSet) -> tuple[list[StepTypeLabel], dict[str, str]]:
    """The label set's labels (a label set has no task-level answers) and each procedure's source id."""
    return _plain(StoredLabel.objects.filter(label_set=label_set))


def study_attention_scores(*, study: Study) -> list[AttentionScore]:
    """Every participant who submitted an item: regular items, attention checks passed of those answered."""
    participants = (
        Participant.objects.counted()
        .filter(study=study)
        .annotate(
            n_items=Count("annotations", filter=Q(annotations__item__is_attention_check=False)),
            n_checks=Count("annotations", filter=Q(annotations__item__is_attention_check=True)),
            n_passed=Count(
                "annotations",
                filter=Q(annotations__item__is_attention_check=True, annotations__attention_passed=True),
            ),
        )
        .filter(Q(n_items__gt=0) | Q(n_checks__gt=0))
        .order_by("prolific_pid")
        .values_list("prolific_pid", "n_items", "n_passed", "n_checks")
    )
    return [AttentionScore(pid, items, passed, total) for pid, items, passed, total in participants]


def study_step_types_agreement(*, study: Study) -> StepTypesAgreement:
    labels, task_labels, sources = study_labels(study=study)
    return step_types_agreement(
        labels, task_labels, sources=sources, attention=study_attention_scores(study=study)
    )


def label_set_agreement(*, label_set: StepTypeLabelSet) -> StepTypesAgreement:
    labels, sources = label_set_labels(label_set=label_set)
    return step_types_agreement(labels, sources=sources)
