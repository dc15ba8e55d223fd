"""What a build keeps of a task (build.py drafts, filters and dedups; split.py cuts it into test and train):
the Funnel that counts what each stage removed, and the Kept drafts, made into Examples only for the share
that is stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .batch import Drafts
from .corpus import Corpus, Draft
from .examples import STEP_ORDERING, Example

REASON_SAMPLES = 3


@dataclass
class Funnel:
    """Per task: drafted examples in, removed at each stage (in order), kept; a few reasons per stage."""

    task: str
    candidates_in: int = 0
    removed: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    reasons: dict[str, list[str]] = field(default_factory=dict)

    def remove_many(self, stage: str, count: int, reasons: Sequence[str]) -> None:
        """`count` drafts removed at `stage`; a few of their reasons kept."""
        if not count:
            return
        self.removed[stage] = self.removed.get(stage, 0) + count
        samples = self.reasons.setdefault(stage, [])
        samples += reasons[: REASON_SAMPLES - len(samples)]

    def merged(self, other: Funnel) -> Funnel:
        """This funnel and another of the same task, counted together."""
        removed = dict(self.removed)
        for stage, count in other.removed.items():
            removed[stage] = removed.get(stage, 0) + count
        reasons = {
            stage: [*self.reasons.get(stage, []), *other.reasons.get(stage, [])][:REASON_SAMPLES]
            for stage in removed
        }
        return Funnel(
            self.task, self.candidates_in + other.candidates_in, removed, self.kept + other.kept, reasons
        )

    def lines(self) -> list[str]:
        lines = [f"{self.task}: {self.candidates_in:,} in"]
        lines += [f"  - {stage}: {count:,}" for stage, count in self.removed.items()]
        lines.append(f"  = {self.kept:,} kept")
        return lines


@dataclass(frozen=True, eq=False)
class Kept:
    """A task's examples before they are made: the drafts, the rows kept (in order) and the item each was
    searched around. A build keeps a few hundred thousand of them at the wikiHow paper's scale and stores
    the share its split keeps: they are made (Example objects, texts and metadata) only then."""

    corpus: Corpus
    drafts: Drafts
    rows: np.ndarray
    seed_items: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def text_ids(self) -> np.ndarray:
        """Per example, the normalised-text ids of its prompt and candidates."""
        prompts = self.corpus.text_ids[self.drafts.prompts[self.rows, 0]]
        return np.column_stack([prompts, self.corpus.text_ids[self.drafts.candidates[self.rows]]])

    def examples(self, which: np.ndarray | None = None) -> list[Example]:
        """The examples (those at positions `which`, in order, when given)."""
        positions = np.arange(len(self.rows)) if which is None else which
        return [
            _example(self.drafts.draft(int(self.rows[i]), 0), self.corpus, seed_item=int(self.seed_items[i]))
            for i in positions.tolist()
        ]


def _example(draft: Draft, corpus: Corpus, *, seed_item: int) -> Example:
    procedures = corpus.procedures
    owners = [int(corpus.owner[item]) for item in draft.candidates]
    if draft.task == STEP_ORDERING:
        first = int(corpus.step_starts[draft.prompt])
        meta: dict[str, Any] = {"step_numbers": [item - first + 1 for item in draft.candidates]}
    else:
        meta = {
            "candidate_pks": [procedures[o].pk for o in owners],
            "candidate_topics": [procedures[o].topic for o in owners],
            "seed_pk": procedures[int(corpus.owner[seed_item])].pk,
        }
    return Example(
        task=draft.task,
        prompt=corpus.texts[draft.prompt],
        candidates=[corpus.texts[item] for item in draft.candidates],
        answer=draft.answer,
        source_pk=procedures[int(corpus.owner[draft.prompt])].pk,
        meta=meta,
    )
