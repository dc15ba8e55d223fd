"""The artifact check of the goal-step paper (§3.1): how often a model that sees only the candidates, never
the prompt, picks the answer. Ours is the centroid baseline: the candidate with the highest mean cosine to
the other candidates (ties: the first). Without label reassignment it finds the positive far above chance,
since the negatives were searched around it; with reassignment it must sit at chance (1/4, or 1/2 for Step
Ordering, where the two candidates are always equally central and so it always picks the first).

The share is reported as k of n with its Wilson score 95 % interval (h2e_site.stats.wilson_interval).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from h2e_site.embeddings.search import unit_rows
from h2e_site.stats import wilson_interval

from .build import Embed, Example
from .kept import Kept

TIE = 1e-6  # centralities this close count as equal (float32 rounding)
BLOCK = 20_000  # examples compared at once


@dataclass(frozen=True)
class ArtifactReport:
    task: str
    correct: int
    n: int
    chance: float  # the mean of 1 / candidates over the examples

    @property
    def share(self) -> float | None:
        return self.correct / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.correct, self.n)

    @property
    def at_chance(self) -> bool:
        """Chance lies inside the 95 % interval (False when there are no examples)."""
        interval = self.interval
        return interval is not None and interval[0] <= self.chance <= interval[1]

    def line(self) -> str:
        interval = self.interval
        if interval is None:
            return f"{self.task}: no examples"
        return (
            f"{self.task}: candidates-only baseline right on {self.correct:,} of {self.n:,} "
            f"({self.correct / self.n:.1%}, 95 % CI {interval[0]:.1%}-{interval[1]:.1%}; "
            f"chance {self.chance:.1%})"
        )


def centroid_choices(examples: Sequence[Example], *, embed: Embed) -> list[int]:
    """Per example, the position of its candidate with the highest mean cosine to its other candidates.
    Each distinct candidate text is embedded once; examples with as many candidates go through together."""
    index: dict[str, int] = {}
    for example in examples:
        for text in example.candidates:
            index.setdefault(text, len(index))
    if not index:
        return []
    vectors = np.asarray(embed(list(index)))  # float16 rows stay float16: a block at a time in float32
    vectors = unit_rows(vectors, np.float16 if vectors.dtype == np.float16 else np.float32, out=vectors)
    choices = np.zeros(len(examples), dtype=np.int64)
    by_size: dict[int, list[int]] = {}
    for number, example in enumerate(examples):
        by_size.setdefault(len(example.candidates), []).append(number)
    for numbers in by_size.values():
        rows = np.array([[index[text] for text in examples[n].candidates] for n in numbers], dtype=np.int64)
        for start in range(0, len(rows), BLOCK):
            block = vectors[rows[start : start + BLOCK]].astype(np.float32)
            choices[numbers[start : start + BLOCK]] = _most_central(block)
    return choices.tolist()


def kept_baseline(task: str, parts: Sequence[tuple[Kept, np.ndarray]]) -> ArtifactReport:
    """The centroid baseline's record on a task's examples before they are made (each part: the examples at
    those positions of a Kept), read from the corpus' vectors by item: what a build runs on the examples it
    stores (candidates_only_baseline does the same on made examples and an embedding function)."""
    correct = n = 0
    chance = 0.0
    for kept, positions in parts:
        rows = kept.rows[positions]
        items, answers = kept.drafts.candidates[rows], kept.drafts.answers[rows, 0]
        corpus = kept.corpus
        for start in range(0, len(items), BLOCK):
            vectors = corpus.vectors[corpus.vector_rows[items[start : start + BLOCK]]].astype(np.float32)
            correct += int((_most_central(vectors) == answers[start : start + BLOCK]).sum())
        n += len(items)
        chance += len(items) / items.shape[1] if len(items) else 0.0
    return ArtifactReport(task=task, correct=correct, n=n, chance=chance / n if n else 0.0)


def _most_central(candidates: np.ndarray) -> np.ndarray:
    """candidates: (examples, k, d) unit rows; per example, the first candidate within TIE of the highest
    sum of cosines to the others."""
    similarity = np.einsum("eid,ejd->eij", candidates, candidates)
    centrality = similarity.sum(axis=2) - np.einsum("eii->ei", similarity)
    return np.argmax(centrality >= centrality.max(axis=1, keepdims=True) - TIE, axis=1)


def candidates_only_baseline(examples: Sequence[Example], *, embed: Embed) -> dict[str, ArtifactReport]:
    """The centroid baseline's record, per task."""
    choices = centroid_choices(examples, embed=embed)
    by_task: dict[str, list[tuple[bool, int]]] = {}
    for example, choice in zip(examples, choices, strict=True):
        by_task.setdefault(example.task, []).append((choice == example.answer, len(example.candidates)))
    return {
        task: ArtifactReport(
            task=task,
            correct=sum(right for right, _ in rows),
            n=len(rows),
            chance=sum(1 / size for _, size in rows) / len(rows),
        )
        for task, rows in by_task.items()
    }
