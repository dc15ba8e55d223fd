"""The nearest neighbours from other topics, searched with faiss: exact below the limit, an inverted-file
index above it (approximate, its recall measured)."""

from __future__ import annotations

import numpy as np

from goal_step.neighbours import nearest_in_other_groups


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _brute_force(vectors: np.ndarray, groups: np.ndarray, texts: np.ndarray, k: int) -> np.ndarray:
    """Rank the other rows; take the best of each group not yet used (nor the row's own), distinct texts."""
    out = np.full((len(vectors), k), -1)
    for row in range(len(vectors)):
        used_groups, used_texts, picked = {groups[row]}, {texts[row]}, []
        for other in np.argsort(-(vectors @ vectors[row]), kind="stable"):
            if groups[other] not in used_groups and texts[other] not in used_texts and len(picked) < k:
                picked.append(other)
                used_groups.add(groups[other])
                used_texts.add(texts[other])
        out[row, : len(picked)] = picked
    return out


def test_it_finds_the_best_match_in_each_other_topic_exactly() -> None:
    rng = np.random.default_rng(0)
    vectors = _unit(rng.standard_normal((300, 16)))
    groups = rng.integers(6, size=300)
    texts = np.arange(300)
    texts[10] = texts[11] = 999  # two rows with the same text are never paired
    got = nearest_in_other_groups(vectors, groups, texts, 3, first_look=4)  # widened for most rows
    assert np.array_equal(got, _brute_force(vectors, groups, texts, 3))
    assert 11 not in got[10] and 10 not in got[11]


def test_it_marks_missing_neighbours_when_there_are_too_few_topics() -> None:
    vectors = _unit(np.eye(4) + 0.1)
    got = nearest_in_other_groups(vectors, np.array([0, 0, 1, 1]), np.arange(4), 3)
    assert (got[:, 1:] == -1).all() and (got[:, 0] >= 0).all()
    assert nearest_in_other_groups(vectors[:0], np.array([]), np.array([]), 3).shape == (0, 3)


def test_it_searches_large_sets_with_an_inverted_file_and_keeps_the_rules() -> None:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((60, 32))
    vectors = _unit(centres[rng.integers(60, size=6_000)] + 1.2 * rng.standard_normal((6_000, 32)))
    groups = rng.integers(14, size=6_000)
    texts = np.arange(6_000)
    exact = nearest_in_other_groups(vectors, groups, texts, 3)
    clustered = nearest_in_other_groups(vectors, groups, texts, 3, exact_limit=1_000, seed=2)
    assert np.array_equal(
        clustered, nearest_in_other_groups(vectors, groups, texts, 3, exact_limit=1_000, seed=2)
    )
    assert (clustered >= 0).all()
    for row in range(0, 6_000, 7):
        picked = groups[clustered[row]]
        assert groups[row] not in picked and len(set(picked)) == 3
    recall = np.mean([exact[row, 0] in clustered[row] for row in range(6_000)])
    assert recall > 0.8  # approximate: 16 of the 154 lists probed
