"""The adjudication queue of a critical-failures study (issue #23): the regular items a reviewer settles.

An item is in the queue when
- its annotators disagree: at least two annotations, not all with the same verdict (a tie is a
  disagreement too); or
- a judge disagrees with the human majority: some judge's usable verdict (parse failures are no verdict)
  differs from the majority of the item's annotations (an item whose humans tie is already in the queue).

Each entry carries the item's Dawid-Skene estimate (annotation/dawid_skene.py, fitted on the study's
"does L2 have a critical failure?" labels): its label and posterior, for the reviewer to see beside the
majority.

Open items (no gold yet) come first, the hardest first: humans tied, then the most judges against the
majority, then the widest split; then the study's order. Items with gold stay in the queue, shown as decided,
so a decision can be reviewed and undone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from judging.models import Judge, Judgment
from judging.versions import cached

from ..agreement import majority
from ..dawid_skene import UnitEstimate, dawid_skene
from ..label_versions import study_labels_version
from ..models import Annotation, Study, StudyItem
from .gold import CriticalGold, gold_items
from .questions import FAILURE, has_failure_question

OPEN, DECIDED, ALL = "open", "decided", "all"
SHOWN = (OPEN, DECIDED, ALL)


@dataclass(frozen=True)
class JudgeVerdict:
    judge_id: str
    model: str
    has_failure: bool


@dataclass
class QueueEntry:
    item: StudyItem
    labels: list[bool]  # the annotators' verdicts (True: a critical failure), in submission order
    judges: list[JudgeVerdict] = field(default_factory=list)
    gold: CriticalGold | None = None
    dawid_skene: UnitEstimate | None = None

    @property
    def dawid_skene_says_failure(self) -> bool | None:
        return None if self.dawid_skene is None else self.dawid_skene.label == FAILURE

    @property
    def majority(self) -> bool | None:
        return majority(self.labels)

    @property
    def n_say_failure(self) -> int:
        return sum(self.labels)

    @property
    def annotators_disagree(self) -> bool:
        return len(set(self.labels)) > 1

    @property
    def judges_against(self) -> list[JudgeVerdict]:
        """The judges whose verdict differs from the human majority (none when the humans tie)."""
        reference = self.majority
        return [] if reference is None else [j for j in self.judges if j.has_failure != reference]

    @property
    def in_queue(self) -> bool:
        return self.annotators_disagree or bool(self.judges_against)

    def sort_key(self) -> tuple[bool, bool, int, float, int]:
        split = abs(self.n_say_failure / len(self.labels) - 0.5) if self.labels else 0.5
        return (
            self.gold is not None,
            self.majority is not None,
            -len(self.judges_against),
            split,
            self.item.position,
        )


@dataclass(frozen=True)
class Queue:
    entries: list[QueueEntry]  # those shown (by `shown`), in the queue's order
    n_open: int
    n_decided: int
    n_gold_outside: int  # items with gold that no longer meet the queue's rule (e.g. a later annotation)

    @staticmethod
    def with_subjects(entries: Iterable[QueueEntry]) -> list[QueueEntry]:
        """with_subjects(): the entries a page shows, with their goal and generator loaded."""
        return with_subjects(entries)


def review_queue(study: Study, shown: str = OPEN, *, with_dawid_skene: bool = True) -> Queue:
    """The study's queue (module docstring); `shown`: open, decided or all of it. Its items are loaded with
    their position and generation only: with_subjects() loads the goal and generator of those shown."""
    entries = _entries(study, with_dawid_skene=with_dawid_skene)
    queued = sorted((e for e in entries.values() if e.in_queue), key=QueueEntry.sort_key)
    n_decided = sum(e.gold is not None for e in queued)
    gold_outside = sum(e.gold is not None and not e.in_queue for e in entries.values())
    keep = {OPEN: lambda e: e.gold is None, DECIDED: lambda e: e.gold is not None}.get(shown, lambda e: True)
    return Queue([e for e in queued if keep(e)], len(queued) - n_decided, n_decided, gold_outside)


def with_subjects(entries: Iterable[QueueEntry]) -> list[QueueEntry]:
    """The entries with their items' generation, procedure and generator loaded (one query: the page's
    entries, not the whole queue)."""
    entries = list(entries)
    items = StudyItem.objects.select_related("generation__procedure", "generation__generator").in_bulk(
        [e.item.pk for e in entries]
    )
    for entry in entries:
        entry.item = items.get(entry.item.pk, entry.item)
    return entries


def queue_entry(item: StudyItem) -> QueueEntry:
    """One item's labels, judges' verdicts and gold (whether or not it is in the queue); its item is `item`
    as given."""
    entry = _entries(item.study, item_ids=[item.pk]).get(item.pk)
    if entry is None:
        return QueueEntry(item, [], gold=gold_items(item.study).get(item.pk))
    entry.item = item
    return entry


def next_open(study: Study, after: StudyItem) -> StudyItem | None:
    """The first open item of the queue other than `after` (where a reviewer goes after deciding)."""
    queue = review_queue(study, OPEN, with_dawid_skene=False)  # the order does not depend on it
    return next((e.item for e in queue.entries if e.item.pk != after.pk), None)


def _entries(
    study: Study, item_ids: list[int] | None = None, *, with_dawid_skene: bool = True
) -> dict[int, QueueEntry]:
    items = StudyItem.objects.filter(study=study).not_attention_checks()
    if item_ids is not None:
        items = items.filter(pk__in=item_ids)
    annotations = Annotation.objects.filter(item__in=items, has_failure__isnull=False)
    labels: dict[int, list[bool]] = defaultdict(list)
    for item_id, has_failure in annotations.order_by("submitted_at", "pk").values_list(
        "item_id", "has_failure"
    ):
        labels[item_id].append(bool(has_failure))
    golds = gold_items(study)
    light = items.only("pk", "study_id", "generation_id", "position")
    entries = {
        item.pk: QueueEntry(item, labels.get(item.pk, []), gold=golds.get(item.pk))
        for item in light
        if item.pk in labels or item.pk in golds
    }
    _add_judges(entries, study if item_ids is None else None)
    if with_dawid_skene:
        _add_dawid_skene(study, entries)
    return entries


def _add_dawid_skene(study: Study, entries: dict[int, QueueEntry]) -> None:
    """Each entry's Dawid-Skene estimate, the model fitted on the whole study's labels (cached for the
    labels' version: a gold decision changes no label, so deciding item after item fits once)."""
    estimates = cached(
        f"adjudication-dawid-skene:{study.pk}",
        lambda: _dawid_skene_units(study),
        version=study_labels_version(study),
    )
    for entry in entries.values():
        entry.dawid_skene = estimates.get(entry.item.generation_id)


def _dawid_skene_units(study: Study) -> dict[Hashable, UnitEstimate]:
    labels = has_failure_question(study).labels
    return {estimate.unit: estimate for estimate in dawid_skene(labels).units} if labels else {}


def _add_judges(entries: dict[int, QueueEntry], study: Study | None = None) -> None:
    """The judges' usable verdicts on the entries' generations (`study`: all its items' generations, read
    through a join rather than sent as a list of ids)."""
    by_generation = {e.item.generation_id: e for e in entries.values() if e.item.generation_id is not None}
    judgments = Judgment.objects.filter(parse_failed=False)
    if study is None:
        judgments = judgments.filter(generation_id__in=list(by_generation))
    else:
        judgments = judgments.filter(  # one join: a generation is one regular item of a study at most
            generation__study_items__study=study, generation__study_items__is_attention_check=False
        )
    names = {
        pk: (model, judge_id) for pk, judge_id, model in Judge.objects.values_list("pk", "judge_id", "model")
    }
    verdicts = sorted(
        (names[judge], generation_id, has_failure)
        for generation_id, judge, has_failure in judgments.values_list(
            "generation_id", "judge_id", "has_failure"
        )
        if generation_id in by_generation
    )
    for (model, judge_id), generation_id, has_failure in verdicts:
        by_generation[generation_id].judges.append(JudgeVerdict(judge_id, model, has_failure))


__all__ = [
    "ALL",
    "DECIDED",
    "OPEN",
    "SHOWN",
    "JudgeVerdict",
    "Queue",
    "QueueEntry",
    "next_open",
    "review_queue",
    "with_subjects",
]
