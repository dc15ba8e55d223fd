"""The adjudication queue of a critical-failures study (issue #23): the regular items a reviewer settles.

An item is in the queue when
- its annotators disagree: at least two annotations, not all with the same verdict (a tie is a
  disagreement too); or
- a judge disagrees with the human majority: some judge's usable verdict (parse failures are no verdict)
  differs from the majority of the item's annotations (an item whose humans tie is already in the queue).

Each entry carries the item's Dawid-Skene estimate (h2e_site/stats/dawid_skene.py, fitted on the study's
"does L2 have a critical failure?" labels): its label and posterior, for the reviewer to see beside the
majority.

Open items (no gold yet) come first, the hardest first: humans tied, then the most judges against the
majority, then the widest split; then the study's order. Items with gold stay in the queue, shown as decided,
so a decision can be reviewed and undone.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from django.db.models import Count, Max

from annotation.base.models import Annotation, Study, StudyItem
from annotation.kinds.critical_failures.gold import CriticalGold, gold_items
from annotation.kinds.critical_failures.label_versions import study_labels_version
from annotation.kinds.critical_failures.questions import FAILURE, has_failure_labels
from h2e_site.stats.dawid_skene import UnitEstimate, dawid_skene
from h2e_site.stats.verdicts import majority
from judging.models import Judge, Judgment
from judging.versions import judgments_version

OPEN, DECIDED, ALL = "open", "decided", "all"
SHOWN = (OPEN, DECIDED, ALL)


@dataclass(frozen=True)
class JudgeVerdict:
    judge_id: str
    model: str
    has_failure: bool


@dataclass(frozen=True)
class ItemRef:
    """An item as the queue reads it: its id, position and generation. The queue of a 10,000-item study holds
    thousands; with_subjects() loads the StudyItem (goal, generator) of the few a page shows."""

    pk: int
    position: int
    generation_id: int | None


Item = TypeVar("Item", StudyItem, ItemRef)


@dataclass
class QueueEntry(Generic[Item]):
    item: Item  # an ItemRef in the queue (with_subjects() loads the StudyItem), a StudyItem on its page
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
        return (self.gold is not None, *self.rank())

    def rank(self) -> tuple[bool, int, float, int]:
        """The order among the open (or among the decided) items: humans tied, most judges against, the
        widest split, then the study's order."""
        split = abs(self.n_say_failure / len(self.labels) - 0.5) if self.labels else 0.5
        return (self.majority is not None, -len(self.judges_against), split, self.item.position)


@dataclass(frozen=True)
class Queue:
    entries: list[QueueEntry[Any]]  # those shown (by `shown`), in the queue's order
    n_open: int
    n_decided: int
    n_gold_outside: int  # items with gold that no longer meet the queue's rule (e.g. a later annotation)

    @staticmethod
    def with_subjects(entries: Iterable[QueueEntry[Any]]) -> list[QueueEntry[Any]]:
        """with_subjects(): the entries a page shows, with their goal and generator loaded."""
        return with_subjects(entries)


def review_queue(study: Study, shown: str = OPEN, *, with_dawid_skene: bool = True) -> Queue:
    """The study's queue (module docstring); `shown`: open, decided or all of it. Its items are loaded with
    their position and generation only: with_subjects() loads the goal and generator of those shown."""
    subjects = _study_subjects(study)
    entries = _entries_of(study, subjects, with_dawid_skene=with_dawid_skene)
    queued = sorted(
        (e for pk, e in entries.items() if subjects[pk].queued),
        key=lambda e: (e.gold is not None, subjects[e.item.pk].rank),
    )
    n_decided = sum(e.gold is not None for e in queued)
    gold_outside = sum(e.gold is not None and not subjects[pk].queued for pk, e in entries.items())
    keep = {OPEN: lambda e: e.gold is None, DECIDED: lambda e: e.gold is not None}.get(shown, lambda e: True)
    return Queue([e for e in queued if keep(e)], len(queued) - n_decided, n_decided, gold_outside)


def with_subjects(entries: Iterable[QueueEntry[Any]]) -> list[QueueEntry[Any]]:
    """The entries with their items' generation, procedure and generator loaded (one query: the page's
    entries, not the whole queue)."""
    entries = list(entries)
    items = StudyItem.objects.select_related("generation__procedure", "generation__generator").in_bulk(
        [e.item.pk for e in entries]
    )
    for entry in entries:
        entry.item = items.get(entry.item.pk, entry.item)
    return entries


def queue_entry(item: StudyItem) -> QueueEntry[StudyItem]:
    """One item's labels, judges' verdicts and gold (whether or not it is in the queue); its item is `item`
    as given."""
    entry = _entries(item.study, item_ids=[item.pk]).get(item.pk)
    if entry is None:
        return QueueEntry(item, [], gold=gold_items(item.study).get(item.pk))
    return QueueEntry(item, entry.labels, entry.judges, entry.gold, entry.dawid_skene)


def next_open(study: Study, after: StudyItem) -> StudyItem | None:
    """The first open item of the queue other than `after` (where a reviewer goes after deciding)."""
    queue = review_queue(study, OPEN, with_dawid_skene=False)  # the order does not depend on it
    following = next((e.item for e in queue.entries if e.item.pk != after.pk), None)
    return None if following is None else StudyItem.objects.filter(pk=following.pk).first()


def _entries(
    study: Study, item_ids: list[int] | None = None, *, with_dawid_skene: bool = True
) -> dict[int, QueueEntry[ItemRef]]:
    """The entries of the study's items that have labels or gold (of `item_ids` only, when given): their
    labels and judges' verdicts are remembered for the study (_SUBJECTS), their gold read each time."""
    subjects = _study_subjects(study) if item_ids is None else _subjects(study, item_ids)
    return _entries_of(study, subjects, with_dawid_skene=with_dawid_skene)


def _entries_of(
    study: Study, subjects: dict[int, _Subject], *, with_dawid_skene: bool = True
) -> dict[int, QueueEntry[ItemRef]]:
    golds = gold_items(study)
    entries = {
        pk: QueueEntry(s.item, list(s.labels), list(s.judges), gold=golds.get(pk))
        for pk, s in subjects.items()
        if s.labels or pk in golds
    }
    if with_dawid_skene:
        _add_dawid_skene(study, entries)
    return entries


def _study_subjects(study: Study) -> dict[int, _Subject]:
    """_subjects(study), remembered for the version of what it reads."""
    return _remembered(_SUBJECTS, study.pk, _subjects_version(study), lambda: _subjects(study))


@dataclass(frozen=True)
class _Subject:
    """A regular item as the queue reads it, without its gold: whether it is queued, and its rank there."""

    item: ItemRef
    labels: tuple[bool, ...]  # the annotators' verdicts, in submission order
    judges: tuple[JudgeVerdict, ...]  # by judge model and id
    queued: bool
    rank: tuple[bool, int, float, int]

    @classmethod
    def of(cls, item: ItemRef, labels: list[bool], judges: list[JudgeVerdict]) -> _Subject:
        entry = QueueEntry(item, labels, judges)
        return cls(item, tuple(labels), tuple(judges), entry.in_queue, entry.rank())


def _subjects(study: Study, item_ids: list[int] | None = None) -> dict[int, _Subject]:
    """Every regular item of the study (of `item_ids` only, when given), with its labels and judges."""
    items = StudyItem.objects.filter(study=study).not_attention_checks()
    if item_ids is not None:
        items = items.filter(pk__in=item_ids)
    annotations = Annotation.objects.filter(item__in=items, has_failure__isnull=False)
    labels: dict[int, list[bool]] = defaultdict(list)
    for item_id, has_failure in annotations.order_by("submitted_at", "pk").values_list(
        "item_id", "has_failure"
    ):
        labels[item_id].append(bool(has_failure))
    refs = [ItemRef(*row) for row in items.values_list("pk", "position", "generation_id")]
    judges = _judge_verdicts({r.generation_id for r in refs if r.generation_id is not None}, study, item_ids)
    return {r.pk: _Subject.of(r, labels.get(r.pk, []), judges.get(r.generation_id or 0, [])) for r in refs}


def _subjects_version(study: Study) -> str:
    """Changes with the study's labels, its items and any judgment (what _subjects reads)."""
    items = StudyItem.objects.filter(study=study).aggregate(n=Count("pk"), last=Max("pk"))
    return f"{study_labels_version(study)}|{items['n']}:{items['last']}|{judgments_version()}"


T = TypeVar("T")
MAX_KEPT = 8  # studies whose last subjects and fit this process keeps
_SUBJECTS: OrderedDict[int, tuple[str, dict[int, _Subject]]] = OrderedDict()
_FITS: OrderedDict[int, tuple[str, dict[Hashable, UnitEstimate]]] = OrderedDict()


def _remembered(
    store: OrderedDict[int, tuple[str, T]], study_pk: int, version: str, compute: Callable[[], T]
) -> T:
    """compute(), or what it gave for this study and version in this process. Kept in memory, not in
    Django's cache: reading 10,000 entries back from a pickle took longer than the page."""
    found = store.get(study_pk)
    if found is None or found[0] != version:
        found = (version, compute())
        store.pop(study_pk, None)
        store[study_pk] = found  # the newest last: the oldest are dropped first
        while len(store) > MAX_KEPT:
            store.popitem(last=False)
    return found[1]


def _add_dawid_skene(study: Study, entries: dict[int, QueueEntry[ItemRef]]) -> None:
    """Each entry's Dawid-Skene estimate, the model fitted on the whole study's labels: fitted once per
    version of those labels (label_versions.study_labels_version), so a reviewer deciding item after item (a
    gold decision changes no label) is not kept waiting for the same fit again."""
    estimates = _remembered(_FITS, study.pk, study_labels_version(study), lambda: _dawid_skene_units(study))
    for entry in entries.values():
        entry.dawid_skene = estimates.get(entry.item.generation_id)


def _dawid_skene_units(study: Study) -> dict[Hashable, UnitEstimate]:
    labels = has_failure_labels(study)
    return {estimate.unit: estimate for estimate in dawid_skene(labels).units} if labels else {}


def _judge_verdicts(
    generation_ids: set[int], study: Study, item_ids: list[int] | None
) -> dict[int, list[JudgeVerdict]]:
    """The judges' usable verdicts on these generations, by judge model and id (the whole study's items:
    read through a join rather than sent as a list of ids)."""
    judgments = Judgment.objects.filter(parse_failed=False)
    if item_ids is not None:
        judgments = judgments.filter(generation_id__in=list(generation_ids))
    else:
        judgments = judgments.filter(  # one join: a generation is one regular item of a study at most
            generation__study_items__study=study, generation__study_items__is_attention_check=False
        )
    names = {
        pk: (model, judge_id) for pk, judge_id, model in Judge.objects.values_list("pk", "judge_id", "model")
    }
    rows = judgments.values_list("judge_id", "generation_id", "has_failure")
    verdicts: dict[int, list[JudgeVerdict]] = defaultdict(list)
    for (model, judge_id), generation_id, has_failure in sorted((names[j], g, f) for j, g, f in rows):
        if generation_id in generation_ids:
            verdicts[generation_id].append(JudgeVerdict(judge_id, model, has_failure))
    return verdicts


__all__ = [
    "ALL",
    "DECIDED",
    "OPEN",
    "SHOWN",
    "ItemRef",
    "JudgeVerdict",
    "Queue",
    "QueueEntry",
    "next_open",
    "review_queue",
    "with_subjects",
]
