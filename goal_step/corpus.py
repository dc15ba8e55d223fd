"""What the builder (build.py) drafts and what its filters (filters.py) read: a Draft (an example before
filtering, by item) and the Corpus (the procedures' goals and steps as items, with what the search and the
filters use). Below both, so that each imports it; numpy arrays in its fields, numpy itself only for the
type checker (the job that queues a build imports the filters' names at start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .examples import ProcedureText

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Draft:
    """An example before filtering, by item (see Corpus): prompt and candidates, the answer a position."""

    task: str
    prompt: int
    candidates: tuple[int, ...]
    answer: int


@dataclass(frozen=True, eq=False)
class Corpus:
    """The procedures in pk order and, per item, what the search and filters use. Items are the goals
    (item p is the goal of procedure p) and then the steps, procedure after procedure."""

    procedures: tuple[ProcedureText, ...]
    texts: tuple[str, ...]
    owner: np.ndarray  # item -> procedure
    step_starts: np.ndarray  # procedure p's steps are items step_starts[p]:step_starts[p + 1]
    groups: np.ndarray  # procedure -> topic id (a procedure without a topic has one of its own)
    text_ids: np.ndarray  # item -> id of its normalised text (equal texts, equal ids)
    word_counts: np.ndarray
    token_starts: np.ndarray  # item i's content-word stems are token_ids[token_starts[i]:token_starts[i + 1]]
    token_ids: np.ndarray  # ... sorted ids into vocabulary, each once
    vocabulary: tuple[str, ...]
    informativeness: np.ndarray  # highest tf-idf of its words within its procedure
    markup: np.ndarray  # True where the text carries markup (filters.markup_in)
    vectors: np.ndarray  # unit rows, one per distinct text (texts repeat: "Gather your materials")
    vector_rows: np.ndarray  # item -> its row of vectors

    def is_step(self, item: int) -> bool:
        return item >= len(self.procedures)

    def step_items(self, procedure: int) -> range:
        return range(int(self.step_starts[procedure]), int(self.step_starts[procedure + 1]))

    def vectors_of(self, items: Any) -> np.ndarray:
        """The items' unit rows (an index, a slice or an array of items), as float32."""
        return self.vectors[self.vector_rows[items]].astype("float32")

    def tokens(self, item: int) -> frozenset[str]:
        """The item's content-word stems."""
        ids = self.token_ids[int(self.token_starts[item]) : int(self.token_starts[item + 1])]
        return frozenset(self.vocabulary[i] for i in ids.tolist())

    def step_slice(self, procedure: int) -> slice:
        return slice(int(self.step_starts[procedure]), int(self.step_starts[procedure + 1]))
