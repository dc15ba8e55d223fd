"""Nearest neighbours from other topics, by cosine, in bounded blocks (paper §3.1: "we then choose 3 steps
under different wikiHow categories with the highest cosine similarity to it").

`nearest_in_other_groups(vectors, groups, texts, k)` gives, for every row, the k rows most similar to it such
that no two of the k and the row itself share a group (a topic, or the procedure itself when it has no topic)
or a text. Equivalently: rank the other groups by their best match to the row and take that best match in
each of the first k groups. Pairwise distinct groups (not merely groups other than the row's) are what makes
label reassignment sound: whichever candidate is redrawn as the positive, the others are from other topics.

The search is exact below `exact_limit` rows: blocks of `block_rows` queries against every row, the
query's own group and text masked in the block, then k rounds of argmax, each masking the picked group.
Above it, an all-pairs product (80,000 steps: ~5 TFLOP, a minute on two cores) is too slow, so the rows are
first cut into clusters by a few rounds of spherical k-means (the inverted-file idea FAISS uses) and the
queries of each cluster are searched, as above, against the rows of its `n_probe` nearest clusters; a query
that finds fewer than k groups there is searched again against every row. The result is then approximate:
a neighbour in a cluster not probed is missed (benchmarks/goal_step_build.py measures the recall). Memory is
bounded by block_rows x (rows searched) floats, never rows x rows.
"""

from __future__ import annotations

import numpy as np

EXACT_LIMIT = 20_000
BLOCK_ROWS = 256
CLUSTER_SIZE = 200
N_PROBE = 12
KMEANS_ROUNDS = 6
KMEANS_SAMPLE = 32


def nearest_in_other_groups(
    vectors: np.ndarray,
    groups: np.ndarray,
    texts: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator,
    exact_limit: int = EXACT_LIMIT,
    block_rows: int = BLOCK_ROWS,
    cluster_size: int = CLUSTER_SIZE,
    n_probe: int = N_PROBE,
) -> np.ndarray:
    """Row i: the indices of its k neighbours, most similar first, -1 where fewer than k groups qualify.

    vectors: (n, d) unit rows; groups, texts: (n,) integer ids (rows with equal ids are never paired)."""
    n = len(vectors)
    result = np.full((n, k), -1, dtype=np.int64)
    if n == 0 or k == 0:
        return result
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids, counts = np.unique(texts, return_counts=True)
    repeated = ids[counts > 1]
    everything = np.arange(n)
    if n <= exact_limit:
        _search(vectors, groups, texts, repeated, everything, everything, k, result, block_rows)
        return result
    members, probes = _clusters(vectors, rng, cluster_size, n_probe)
    for cluster, queries in enumerate(members):
        if len(queries):
            candidates = np.sort(np.concatenate([members[c] for c in probes[cluster]]))
            _search(vectors, groups, texts, repeated, queries, candidates, k, result, block_rows)
    short = np.flatnonzero((result < 0).any(axis=1))
    if len(short):
        _search(vectors, groups, texts, repeated, short, everything, k, result, block_rows)
    return result


def _search(
    vectors: np.ndarray,
    groups: np.ndarray,
    texts: np.ndarray,
    repeated: np.ndarray,
    queries: np.ndarray,
    candidates: np.ndarray,
    k: int,
    result: np.ndarray,
    block_rows: int,
) -> None:
    """Exact search of `queries` among `candidates`, block by block, written into result[queries]. The
    candidates are put in group order, so that masking a group in a row is one slice; a text that occurs more
    than once (`repeated`) is masked at each of its positions."""
    candidates = candidates[np.argsort(groups[candidates], kind="stable")]
    candidate_groups = groups[candidates]
    candidate_texts = texts[candidates]
    candidate_vectors = vectors[candidates]
    present, starts = np.unique(candidate_groups, return_index=True)
    ends = [*starts[1:].tolist(), len(candidates)]
    span = dict(zip(present.tolist(), zip(starts.tolist(), ends, strict=True), strict=True))
    same_text: dict[int, list[int]] = {}
    for position in np.flatnonzero(np.isin(candidate_texts, repeated)).tolist():
        same_text.setdefault(int(candidate_texts[position]), []).append(position)

    def mask(scores: np.ndarray, row: int, group: int, text: int) -> None:
        if group in span:
            first, last = span[group]
            scores[row, first:last] = -np.inf
        if text in same_text:
            scores[row, same_text[text]] = -np.inf

    for start in range(0, len(queries), block_rows):
        rows = queries[start : start + block_rows]
        scores = vectors[rows] @ candidate_vectors.T
        for row, (group, text) in enumerate(zip(groups[rows].tolist(), texts[rows].tolist(), strict=True)):
            mask(scores, row, group, text)
        picks = np.full((len(rows), k), -1, dtype=np.int64)
        every_row = np.arange(len(rows))
        for rank in range(k):
            best = scores.argmax(axis=1)
            found = np.flatnonzero(np.isfinite(scores[every_row, best]))
            picks[found, rank] = candidates[best[found]]
            if rank + 1 < k:
                for row in found.tolist():
                    position = int(best[row])
                    mask(scores, row, int(candidate_groups[position]), int(candidate_texts[position]))
        result[rows] = picks


def _clusters(
    vectors: np.ndarray, rng: np.random.Generator, cluster_size: int, n_probe: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Spherical k-means on a sample (KMEANS_SAMPLE rows per cluster), then every row to its nearest centre.
    Returns the member rows of each cluster and, per cluster, its n_probe nearest clusters (itself first)."""
    n = len(vectors)
    n_clusters = max(1, n // cluster_size)
    sample = vectors[np.sort(rng.choice(n, size=min(n, n_clusters * KMEANS_SAMPLE), replace=False))]
    centres = sample[np.sort(rng.choice(len(sample), size=n_clusters, replace=False))].copy()
    for _ in range(KMEANS_ROUNDS):
        nearest = _nearest_centre(sample, centres)
        order = np.argsort(nearest, kind="stable")
        bounds = np.searchsorted(nearest[order], np.arange(n_clusters))
        padded = np.vstack([sample[order], np.zeros((1, sample.shape[1]), dtype=sample.dtype)])
        sums = np.add.reduceat(padded, bounds, axis=0)
        sums[np.diff(np.append(bounds, len(sample))) == 0] = 0  # reduceat gives an empty cluster a row
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centres = np.where(norms > 0, sums / np.maximum(norms, 1e-12), centres)
    nearest = _nearest_centre(vectors, centres)
    order = np.argsort(nearest, kind="stable")
    bounds = np.searchsorted(nearest[order], np.arange(n_clusters + 1))
    members = [order[bounds[c] : bounds[c + 1]] for c in range(n_clusters)]
    probes = np.argsort(-(centres @ centres.T), axis=1, kind="stable")[:, : min(n_probe, n_clusters)]
    return members, probes


def _nearest_centre(vectors: np.ndarray, centres: np.ndarray, block_rows: int = 4096) -> np.ndarray:
    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), block_rows):
        out[start : start + block_rows] = (vectors[start : start + block_rows] @ centres.T).argmax(axis=1)
    return out
