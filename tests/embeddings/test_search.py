"""Neighbour search with faiss: exact below the limit, an inverted file above it with its recall measured."""

from __future__ import annotations

import numpy as np

from h2e_site.embeddings.search import VectorIndex, exact_search, index_cached, nprobe_for, recall_at_k


def clustered_unit_rows(n: int, dimension: int = 32, *, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dimension))
    rows = centres[rng.integers(40, size=n)] + 0.8 * rng.standard_normal((n, dimension))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_exact_index_is_the_brute_force_ranking() -> None:
    vectors = clustered_unit_rows(500)
    index = VectorIndex.build(vectors)
    assert index.exact
    scores, ids = index.search(vectors[:50], 5)
    brute = np.argsort(-(vectors[:50] @ vectors.T), axis=1, kind="stable")[:, :5]
    assert np.array_equal(ids, brute)
    assert np.allclose(scores, np.take_along_axis(vectors[:50] @ vectors.T, brute, axis=1), atol=1e-5)


def test_the_approximate_index_finds_most_exact_neighbours_and_is_reproducible() -> None:
    vectors = clustered_unit_rows(12_000, seed=1)
    index = VectorIndex.build(vectors, exact_limit=1_000, seed=3)
    assert not index.exact
    recall = recall_at_k(index, vectors, k=10, sample=300, seed=4)
    assert 0.9 <= recall <= 1.0  # 16 of 219 lists probed
    again = VectorIndex.build(vectors, exact_limit=1_000, seed=3)
    assert np.array_equal(index.search(vectors[:100], 10)[1], again.search(vectors[:100], 10)[1])


def test_it_asks_for_no_more_neighbours_than_rows() -> None:
    vectors = clustered_unit_rows(3)
    _, ids = VectorIndex.build(vectors).search(vectors, 10)
    assert ids.shape == (3, 3) and sorted(ids[0].tolist()) == [0, 1, 2]
    assert exact_search(vectors, vectors[:1], 1)[1].tolist() == [[0]]


def test_it_keeps_an_index_per_key() -> None:
    vectors = clustered_unit_rows(50)
    built: list[int] = []

    def rows() -> np.ndarray:
        built.append(1)
        return vectors

    first = index_cached(("tests", "a"), rows)
    assert index_cached(("tests", "a"), rows) is first and len(built) == 1
    index_cached(("tests", "b"), rows)
    assert len(built) == 2


def test_it_probes_lists_holding_about_the_rows_asked_for() -> None:
    for n in (20_001, 80_000, 200_000, 735_000, 5_000_000):
        nprobe = nprobe_for(n, 2_500)
        per_list = n / int(2 * np.sqrt(n))
        assert 4 <= nprobe <= 16
        assert nprobe in (4, 16) or (nprobe - 1) * per_list < 2_500 <= nprobe * per_list
    assert nprobe_for(735_000, 2_500) == 6 and nprobe_for(80_000, 2_500) == 16


def test_eight_bit_codes_find_most_exact_neighbours_too() -> None:
    vectors = clustered_unit_rows(12_000, seed=1)
    index = VectorIndex.build(vectors, exact_limit=1_000, seed=3, code_bits=8)
    assert index.index.code_size == vectors.shape[1]  # one byte a dimension
    assert recall_at_k(index, vectors, k=10, sample=300, seed=4) >= 0.9
