"""The filters of filters.py applied to a whole task's drafts at once, as arrays (build.py): what a build of
100,000 procedures needs, where calling each filter on each of a few million drafts takes minutes.

Drafts: one task's drafted examples. Row r has its candidates (already in their shown order) and one or more
labelings: labeling 0 is the example as drawn, and when the build is label-blind labeling l > 0 is the same
candidates with another candidate as the positive and its prompt (see build.py). A batch filter returns an
(rows, labelings) array, True where that labeling fails; it must say what its filter says of every draft
(tests/goal_step/test_batch.py checks each against its filter on random drafts). `batch_of(check)` finds the
batch form of a filter of filters.py, through functools.partial and its keywords; any other filter (a
caller's own) is applied draft by draft.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .corpus import Corpus, Draft
from .examples import GOAL_INFERENCE, STEP_INFERENCE
from .filters import (
    MAX_SIMILARITY,
    MIN_TFIDF,
    MIN_WORDS,
    Filter,
    distinct_filter,
    length_filter,
    lexical_overlap_filter,
    markup_filter,
    similarity_filter,
    tfidf_filter,
)
from .lexicon import segments_gather

PAIR_BLOCK = 262_144  # (text, text) pairs compared at once: bounds the memory of a block's token lists


@dataclass(frozen=True)
class Drafts:
    """Drafts of one task: candidates (rows, k) items in their shown order; per labeling, prompts and
    answers (rows, labelings)."""

    task: str
    candidates: np.ndarray
    prompts: np.ndarray
    answers: np.ndarray

    def __len__(self) -> int:
        return len(self.candidates)

    def take(self, rows: np.ndarray) -> Drafts:
        return Drafts(self.task, self.candidates[rows], self.prompts[rows], self.answers[rows])

    def draft(self, row: int, labeling: int) -> Draft:
        return Draft(
            self.task,
            int(self.prompts[row, labeling]),
            tuple(self.candidates[row].tolist()),
            int(self.answers[row, labeling]),
        )


BatchFilter = Callable[[Drafts, Corpus], np.ndarray]


def _any_item(fails: np.ndarray, drafts: Drafts) -> np.ndarray:
    """A labeling fails when its prompt or any candidate is an item that fails (`fails` per item)."""
    return fails[drafts.prompts] | fails[drafts.candidates].any(axis=1)[:, None]


def length_batch(drafts: Drafts, corpus: Corpus, *, min_words: int = MIN_WORDS) -> np.ndarray:
    return _any_item(corpus.word_counts < min_words, drafts)


def tfidf_batch(drafts: Drafts, corpus: Corpus, *, min_tfidf: float = MIN_TFIDF) -> np.ndarray:
    low = corpus.informativeness < min_tfidf
    low[: len(corpus.procedures)] = False  # goals are not checked
    return _any_item(low, drafts)


def markup_batch(drafts: Drafts, corpus: Corpus) -> np.ndarray:
    return _any_item(corpus.markup, drafts)


def lexical_overlap_batch(drafts: Drafts, corpus: Corpus) -> np.ndarray:
    rows, labelings = drafts.prompts.shape
    k = drafts.candidates.shape[1]
    prompts = np.repeat(drafts.prompts.ravel(), k)
    candidates = np.broadcast_to(drafts.candidates[:, None, :], (rows, labelings, k)).ravel()
    shared = shares_a_token(corpus, prompts, candidates).reshape(rows, labelings, k)
    return np.asarray(shared.any(axis=2))


def shares_a_token(corpus: Corpus, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (a[i], b[i]) of items: do they share a content-word stem?"""
    shared = np.zeros(len(a), dtype=bool)
    width = len(corpus.vocabulary) or 1
    for start in range(0, len(a), PAIR_BLOCK):
        block = slice(start, start + PAIR_BLOCK)
        keys = [_pair_tokens(corpus, side[block], width) for side in (a, b)]
        common = np.intersect1d(keys[0], keys[1], assume_unique=True)
        shared[start + common // width] = True
    return shared


def _pair_tokens(corpus: Corpus, items: np.ndarray, width: int) -> np.ndarray:
    pair, positions = segments_gather(corpus.token_starts, items)
    return pair * width + corpus.token_ids[positions]


def similarity_batch(drafts: Drafts, corpus: Corpus, *, max_similarity: float = MAX_SIMILARITY) -> np.ndarray:
    """Step Inference: a negative candidate close to a step of the prompt's goal; Goal Inference: the prompt
    step close to a step of a negative goal (filters.similarity_filter)."""
    rows, labelings = drafts.prompts.shape
    k = drafts.candidates.shape[1]
    if drafts.task not in (STEP_INFERENCE, GOAL_INFERENCE):
        return np.zeros((rows, labelings), dtype=bool)
    negative = np.arange(k)[None, None, :] != drafts.answers[:, :, None]  # (rows, labelings, k)
    candidates = np.broadcast_to(drafts.candidates[:, None, :], negative.shape)[negative]
    prompts = np.broadcast_to(drafts.prompts[:, :, None], negative.shape)[negative]
    if drafts.task == STEP_INFERENCE:
        items, procedures = candidates, corpus.owner[prompts]
    else:
        items, procedures = prompts, candidates
    close = np.zeros(negative.shape, dtype=bool)
    close[negative] = step_similarity(corpus, items, procedures) >= max_similarity
    return np.asarray(close.any(axis=2))


def step_similarity(corpus: Corpus, items: np.ndarray, procedures: np.ndarray) -> np.ndarray:
    """Per pair, the highest cosine between item items[i] and a step of procedure procedures[i] (-inf for a
    procedure without steps). Pairs are taken a procedure at a time: its steps' vectors are read once."""
    keys = np.unique(procedures * len(corpus.texts) + items)  # each (procedure, item) once
    if not len(keys):
        return np.zeros(0, dtype=np.float32)
    pair_procedures, pair_items = keys // len(corpus.texts), keys % len(corpus.texts)
    best = np.full(len(keys), -np.inf, dtype=np.float32)
    bounds = np.flatnonzero(np.diff(pair_procedures)) + 1
    for start, end in zip(np.r_[0, bounds], np.r_[bounds, len(keys)], strict=True):
        steps = corpus.vectors_of(corpus.step_slice(int(pair_procedures[start])))
        if len(steps):
            rows = corpus.vectors_of(pair_items[start:end])
            best[start:end] = (rows @ steps.T).max(axis=1)
    return best[np.searchsorted(keys, procedures * len(corpus.texts) + items)]


def distinct_batch(drafts: Drafts, corpus: Corpus) -> np.ndarray:
    ids = np.sort(corpus.text_ids[drafts.candidates], axis=1)
    same = (ids[:, 1:] == ids[:, :-1]).any(axis=1)
    return np.repeat(same[:, None], drafts.prompts.shape[1], axis=1)


BATCH_FORMS: dict[Callable[..., Any], Callable[..., np.ndarray]] = {
    length_filter: length_batch,
    tfidf_filter: tfidf_batch,
    markup_filter: markup_batch,
    lexical_overlap_filter: lexical_overlap_batch,
    similarity_filter: similarity_batch,
    distinct_filter: distinct_batch,
}


def batch_of(check: Filter) -> BatchFilter:
    """The batch form of a filter (with a partial's keywords), or the filter applied draft by draft."""
    function, keywords = (check.func, check.keywords) if isinstance(check, partial) else (check, {})
    form = BATCH_FORMS.get(function)
    if form is not None and not (isinstance(check, partial) and check.args):
        return partial(form, **keywords)
    return partial(_draft_by_draft, check)


def _draft_by_draft(check: Filter, drafts: Drafts, corpus: Corpus) -> np.ndarray:
    rows, labelings = drafts.prompts.shape
    fails = np.zeros((rows, labelings), dtype=bool)
    for row in range(rows):
        for labeling in range(labelings):
            fails[row, labeling] = check(drafts.draft(row, labeling), corpus) is not None
    return fails
