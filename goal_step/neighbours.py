"""Nearest neighbours from other topics, by cosine (paper §3.1: "we then choose 3 steps under different
wikiHow categories with the highest cosine similarity to it"), searched with faiss
(h2e_site.embeddings.search).

`nearest_in_other_groups(vectors, groups, texts, k)` gives, for every row, the k rows most similar to it such
that no two of the k and the row itself share a group (a topic, or the procedure itself when it has no topic)
or a text. Equivalently: rank the other groups by their best match to the row and take that best match in
each of the first k groups. Pairwise distinct groups (not merely groups other than the row's) are what makes
label reassignment sound: whichever candidate is redrawn as the positive, the others are from other topics.

The index (exact below its EXACT_LIMIT rows, an inverted file above, see search.py) gives each row its
`first_look` nearest rows; they are then walked in order of similarity, all rows at once, keeping a
candidate whose group and text differ from the row's and from those kept before it. A row that finds fewer
than k such candidates among them asks again for more (x WIDEN, up to every row): exact below the index's
limit, approximate above it as the index is (benchmarks/goal_step_build.py measures the recall). Every row
searching among every row costs n x (rows a query scans), so a query scans about SCAN_ROWS rows (16 lists up
to ~98,000 rows, fewer above: 6 of 1,714 at 735,000, where 16 took 110 s of a 100,000-procedure build).
"""

from __future__ import annotations

import numpy as np

from h2e_site.embeddings.search import EXACT_LIMIT, VectorIndex, nprobe_for

FIRST_LOOK = 32  # neighbours asked for each row first
SCAN_ROWS = 2_500  # rows a query scans in the inverted file (search.nprobe_for)
WIDEN = 8  # ... then this many times more for the rows still short
BLOCK = 65_536  # rows searched at once
EIGHT_BIT_ABOVE = 300_000  # rows: a larger index keeps 8-bit codes (282 MB at 735,000 rows, not 565 MB)


def nearest_in_other_groups(
    vectors: np.ndarray,
    groups: np.ndarray,
    texts: np.ndarray,
    k: int,
    *,
    rows: np.ndarray | None = None,
    seed: int = 0,
    exact_limit: int = EXACT_LIMIT,
    first_look: int = FIRST_LOOK,
) -> np.ndarray:
    """Row i: the indices of its k neighbours, most similar first, -1 where fewer than k groups qualify.

    vectors: (n, d) unit rows; groups, texts: (n,) integer ids (rows with equal ids are never paired). With
    `rows`, the search is among vectors[rows] (groups and texts are then theirs, one per row), read from
    `vectors` a block at a time rather than copied."""
    rows = np.arange(len(vectors)) if rows is None else rows
    n = len(rows)
    result = np.full((n, k), -1, dtype=np.int64)
    if n == 0 or k == 0:
        return result
    nprobe = nprobe_for(n, SCAN_ROWS)
    bits = 8 if n > EIGHT_BIT_ABOVE else 16
    index = VectorIndex.build(
        vectors, rows=rows, exact_limit=exact_limit, seed=seed, nprobe=nprobe, code_bits=bits
    )
    short = np.arange(n)
    look = first_look
    while len(short):
        for start in range(0, len(short), BLOCK):  # a block's (rows, look) results at a time, not all
            block = short[start : start + BLOCK]
            _, found = index.search(vectors, min(look + 1, n), rows=rows[block])
            result[block] = _distinct(found, block, groups, texts, k)
        if look + 1 >= n:
            break
        short = short[(result[short] < 0).any(axis=1)]
        look *= WIDEN
    return result


def _distinct(
    found: np.ndarray, rows: np.ndarray, groups: np.ndarray, texts: np.ndarray, k: int
) -> np.ndarray:
    """For each row, the first k of its candidates (in `found`'s order) whose groups and texts are pairwise
    distinct and differ from the row's own; -1 where fewer qualify."""
    picked = np.full((len(rows), k), -1, dtype=np.int64)
    picked_groups = np.full((len(rows), k + 1), -1, dtype=np.int64)
    picked_texts = np.full((len(rows), k + 1), -1, dtype=np.int64)
    picked_groups[:, 0], picked_texts[:, 0] = groups[rows], texts[rows]
    count = np.zeros(len(rows), dtype=np.int64)
    everyone = np.arange(len(rows))
    for column in range(found.shape[1]):
        candidate = found[:, column]
        valid = candidate >= 0
        group = np.where(valid, groups[np.maximum(candidate, 0)], -2)
        text = np.where(valid, texts[np.maximum(candidate, 0)], -2)
        fresh = (
            valid
            & (count < k)
            & ~(picked_groups == group[:, None]).any(axis=1)
            & ~(picked_texts == text[:, None]).any(axis=1)
        )
        chosen = everyone[fresh]
        picked[chosen, count[chosen]] = candidate[chosen]
        picked_groups[chosen, count[chosen] + 1] = group[chosen]
        picked_texts[chosen, count[chosen] + 1] = text[chosen]
        count[chosen] += 1
        if (count >= k).all():
            break
    return picked
