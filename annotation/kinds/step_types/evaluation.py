"""How each step-type classifier scores against human labels on a study's procedures: the SIO paper's
Table 3 (P / R / F1 per type and their macro "All") overall and per topic (Figure 3), with the unparsable
answers counted apart and the SEQUENTIAL / INTERCHANGEABLE contradiction rate beside the humans'.

Definitions (the formulas are measures.py's; this module only gathers the rows):
- Items: (unit, candidate key) with unit = the procedure's pk as a string, over the procedures of the
  study's regular items (attention checks are left out, their labels too).
- Gold, source "study": the strict majority of the study's participants per item (measures.majority_labels,
  one label per participant, StepTypeLabel.annotator), positive only where the majority holds
  (measures.gold_labels: a tie is negative and counted in n_ties). Source "set:<name>": the same over an
  imported StepTypeLabelSet's annotators, on the study's procedures.
- A classifier is scored when it has a prediction for at least one gold item; it is scored on every gold
  item, a missing prediction (n_missing) or an unparsable one (n_unparsable, holds None) counting as a
  negative answer, as measures.f1_per_type says. Topic: the procedure's topic name; ALL is every topic.
- Contradiction (measures.contradiction_rate): among the SEQUENTIAL pairs that hold and whose
  INTERCHANGEABLE counterpart has a decision, the share whose counterpart holds too; for a model over its
  predictions on the gold items, for the humans over the gold labels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from annotation.base.models import Study, StudyItem
from annotation.kinds.step_types import measures
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.measures import ALL, Contradiction, Evaluation, Item
from annotation.kinds.step_types.models import (
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)

__all__ = [
    "GOLD_STUDY",
    "LABEL_SET_PREFIX",
    "Column",
    "GoldFigures",
    "GoldSource",
    "ModelFigures",
    "StepTypeModelsTable",
    "gold_sources",
    "step_type_models_table",
]

GOLD_STUDY = "study"
LABEL_SET_PREFIX = "set:"


@dataclass(frozen=True)
class GoldSource:
    """Whose labels are the reference: "study" (its participants) or "set:<name>" (an imported set)."""

    key: str
    label: str


@dataclass(frozen=True)
class Column:
    """A classifier's Table 3 row over the gold items of one topic (ALL: every topic): the scores, the gold
    items, those it answered, and those whose answer could not be read."""

    topic: str
    evaluation: Evaluation
    n_items: int
    n_predicted: int
    n_unparsable: int

    @property
    def n_missing(self) -> int:
        return self.n_items - self.n_predicted


@dataclass(frozen=True)
class ModelFigures:
    classifier: StepTypeClassifier
    columns: dict[str, Column]  # ALL first, then each topic in sorted order
    contradiction: Contradiction

    @property
    def overall(self) -> Column:
        return self.columns[ALL]

    @property
    def by_topic(self) -> list[Column]:
        return [column for topic, column in self.columns.items() if topic != ALL]


@dataclass(frozen=True)
class GoldFigures:
    """The reference labels: items and positives per type, ties, who labelled, and their contradiction."""

    n_items: int
    n_procedures: int
    n_annotators: int
    n_ties: int
    items_by_type: dict[StepType, int]
    positives_by_type: dict[StepType, int]
    items_by_topic: dict[str, int]
    contradiction: Contradiction


@dataclass(frozen=True)
class StepTypeModelsTable:
    study: Study
    source: GoldSource
    sources: list[GoldSource]
    gold: GoldFigures
    topics: list[str]  # ALL, then each topic
    models: list[ModelFigures] = field(default_factory=list)  # best macro F1 first


def _study_procedure_ids(study: Study) -> list[int]:
    return list(
        StudyItem.objects.filter(study=study, is_attention_check=False, procedure__isnull=False)
        .order_by("procedure_id")
        .values_list("procedure_id", flat=True)
        .distinct()
    )


def gold_sources(study: Study) -> list[GoldSource]:
    """The study's own participants, then every imported label set with labels on its procedures."""
    names = (
        StepTypeLabelSet.objects.filter(labels__candidate__procedure__study_items__study=study)
        .values_list("name", flat=True)
        .distinct()
        .order_by("name")
    )
    return [
        GoldSource(GOLD_STUDY, "Human majority of this study's participants"),
        *(
            GoldSource(f"{LABEL_SET_PREFIX}{name}", f"Majority of the imported label set {name}")
            for name in names
        ),
    ]


def _labels(study: Study, source: GoldSource) -> list[measures.StepTypeLabel]:
    rows = StepTypeLabel.objects.all()
    if source.key == GOLD_STUDY:
        rows = rows.filter(annotation__study=study, annotation__item__is_attention_check=False)
    else:
        rows = rows.filter(
            label_set__name=source.key.removeprefix(LABEL_SET_PREFIX),
            candidate__procedure_id__in=_study_procedure_ids(study),
        )
    values = rows.values_list(
        "candidate__procedure_id",
        "annotator",
        "candidate__key",
        "holds",
        "expert",
        "candidate__procedure__topic__name",
    )
    return [
        measures.StepTypeLabel(str(unit), annotator, key, holds, expert, topic)
        for unit, annotator, key, holds, expert, topic in values
    ]


def step_type_models_table(*, study: Study, source: str = GOLD_STUDY) -> StepTypeModelsTable:
    """Every classifier with predictions on the study's gold items, against the gold of `source` (a key of
    gold_sources; LookupError for another). Four queries and a few Python passes over the rows."""
    sources = gold_sources(study)
    chosen = next((s for s in sources if s.key == source), None)
    if chosen is None:
        raise LookupError(f"no gold source {source!r} for study {study.slug!r}")
    labels = _labels(study, chosen)
    majorities = measures.majority_labels(labels)
    gold = measures.gold_labels(majorities)
    topic_of = {label.unit: label.topic for label in labels if label.topic is not None}
    topics = [ALL, *sorted(set(topic_of.values()))]
    gold_figures = _gold_figures(labels, majorities, gold, topic_of, topics)
    predictions: dict[int, dict[Item, bool | None]] = {}
    units = sorted({int(unit) for unit, _ in gold})
    rows = StepTypePrediction.objects.filter(candidate__procedure_id__in=units).values_list(
        "classifier_id", "candidate__procedure_id", "candidate__key", "holds"
    )
    for classifier_pk, unit, key, holds in rows:
        item = (str(unit), key)
        if item in gold:
            predictions.setdefault(classifier_pk, {})[item] = holds
    classifiers = StepTypeClassifier.objects.in_bulk(list(predictions))
    models = [
        _model_figures(classifiers[pk], answers, gold, topic_of, topics)
        for pk, answers in predictions.items()
    ]
    models.sort(key=lambda m: (-m.overall.evaluation.all.f1, m.classifier.model, m.classifier.classifier_id))
    return StepTypeModelsTable(study, chosen, sources, gold_figures, topics, models)


def _in_topic(item: Item, topic: str, topic_of: dict[str, str]) -> bool:
    return topic == ALL or topic_of.get(item[0]) == topic


def _gold_figures(
    labels: list[measures.StepTypeLabel],
    majorities: dict[Item, measures.Majority],
    gold: dict[Item, bool],
    topic_of: dict[str, str],
    topics: list[str],
) -> GoldFigures:
    items_by_type: Counter[StepType] = Counter()
    positives: Counter[StepType] = Counter()
    for item, holds in gold.items():
        step_type = measures.step_type_of(item[1])
        items_by_type[step_type] += 1
        positives[step_type] += holds
    return GoldFigures(
        n_items=len(gold),
        n_procedures=len({unit for unit, _ in gold}),
        n_annotators=len({label.annotator for label in labels}),
        n_ties=sum(1 for majority in majorities.values() if majority.tie),
        items_by_type={t: items_by_type[t] for t in StepType},
        positives_by_type={t: positives[t] for t in StepType},
        items_by_topic={
            topic: sum(1 for item in gold if _in_topic(item, topic, topic_of)) for topic in topics
        },
        contradiction=measures.contradiction_rate(gold),
    )


def _model_figures(
    classifier: StepTypeClassifier,
    answers: dict[Item, bool | None],
    gold: dict[Item, bool],
    topic_of: dict[str, str],
    topics: list[str],
) -> ModelFigures:
    evaluations = measures.evaluate_by_topic(answers, gold, topic_of)
    columns = {}
    for topic in topics:
        items = [item for item in gold if _in_topic(item, topic, topic_of)]
        columns[topic] = Column(
            topic=topic,
            evaluation=evaluations[topic],
            n_items=len(items),
            n_predicted=sum(1 for item in items if item in answers),
            n_unparsable=sum(1 for item in items if item in answers and answers[item] is None),
        )
    return ModelFigures(classifier, columns, measures.contradiction_rate(answers))
