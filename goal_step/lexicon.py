"""What the filters read of each text, computed once per distinct text and held as arrays (build.py's
prepare_corpus): its normalised form's id, its word count, whether it carries markup, its content-word stems
as ids into a vocabulary (with how often each occurs) and, per item, the best tf-idf of its words within its
procedure. A corpus of 100,000 procedures has about 900,000 items; sets of strings per item would cost more
memory than their vectors, and Python loops over them more time than the search.

Segments: a ragged list of id lists is held as `starts` (length n + 1) and `ids`; `segments_gather` takes
some of them (in a given order, with repeats) without a Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .filters import STOPWORDS, markup_in, stem, words


@dataclass(frozen=True)
class Lexicon:
    """Per distinct text (row d): normalised-text id, word count, markup, content-word stems (ids, counts)."""

    normalised_ids: np.ndarray
    word_counts: np.ndarray
    markup: np.ndarray
    token_starts: np.ndarray
    token_ids: np.ndarray  # sorted within a text, each once
    token_counts: np.ndarray  # how often that stem occurs in the text
    vocabulary: tuple[str, ...]

    @classmethod
    def of(cls, texts: Sequence[str]) -> Lexicon:
        """The lexicon of `texts` (distinct), in their order."""
        normalised: dict[str, int] = {}
        vocabulary: dict[str, int] = {}
        normalised_ids, word_counts, markup, lengths = [], [], [], []
        token_ids: list[int] = []
        token_counts: list[int] = []
        for text in texts:
            text_words = words(text)
            normalised_ids.append(normalised.setdefault(" ".join(text_words), len(normalised)))
            word_counts.append(len(text_words))
            markup.append(bool(markup_in(text)))
            stems: dict[int, int] = {}
            for word in text_words:
                if word not in STOPWORDS:
                    token = vocabulary.setdefault(stem(word), len(vocabulary))
                    stems[token] = stems.get(token, 0) + 1
            ordered = sorted(stems)
            token_ids += ordered
            token_counts += [stems[t] for t in ordered]
            lengths.append(len(ordered))
        return cls(
            normalised_ids=np.array(normalised_ids, dtype=np.int64),
            word_counts=np.array(word_counts, dtype=np.int64),
            markup=np.array(markup, dtype=bool),
            token_starts=_starts(np.array(lengths, dtype=np.int64)),
            token_ids=np.array(token_ids, dtype=np.int64),
            token_counts=np.array(token_counts, dtype=np.int64),
            vocabulary=tuple(vocabulary),
        )


def _starts(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def segments_gather(starts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments `rows` (of a ragged list held as starts/values): (which of `rows` each position belongs
    to, the positions into the values), in order."""
    lengths = starts[rows + 1] - starts[rows]
    owner = np.repeat(np.arange(len(rows)), lengths)
    offsets = np.arange(int(lengths.sum())) - np.repeat(_starts(lengths)[:-1], lengths)
    return owner, starts[rows][owner] + offsets


def item_tokens(lexicon: Lexicon, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item (its distinct-text row in `rows`): starts, token ids and counts of its segments."""
    _, positions = segments_gather(lexicon.token_starts, rows)
    lengths = lexicon.token_starts[rows + 1] - lexicon.token_starts[rows]
    return _starts(lengths), lexicon.token_ids[positions], lexicon.token_counts[positions]


def best_tfidf(
    token_starts: np.ndarray, token_ids: np.ndarray, token_counts: np.ndarray, owner: np.ndarray, n: int
) -> np.ndarray:
    """Per item, the highest tf * idf of its content words (0.0 without any), a procedure being the document:
    tf the word's count over the procedure's goal and steps, idf = ln(n procedures / procedures containing
    the word). filters.informativeness computes the same by hand, text by text."""
    items = len(token_starts) - 1
    item_of = np.repeat(np.arange(items), np.diff(token_starts))
    width = int(token_ids.max()) + 1 if len(token_ids) else 1
    keys = owner[item_of] * width + token_ids
    unique, inverse = np.unique(keys, return_inverse=True)
    tf = np.bincount(inverse, weights=token_counts, minlength=len(unique))
    df = np.bincount(unique % width, minlength=width)
    idf = np.log(n / np.maximum(df, 1))
    scores = tf[inverse] * idf[token_ids]
    best = np.zeros(items)
    np.maximum.at(best, item_of, scores)
    return best
