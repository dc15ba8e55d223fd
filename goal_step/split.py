"""Cutting a build into test and train (§3.4): by text, test examples drawn per task and every train
example sharing a normalised text with a test one dropped (split_kept, and split_train_test, the rule on a
list of examples); or by procedure (procedures_split), each side then built on its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .examples import TASKS, Example, ProcedureText, pk_order
from .filters import words
from .kept import Kept


@dataclass(frozen=True)
class KeptSplit:
    """Positions (into a task's Kept) of its test and train examples, and how many train ones were dropped
    for sharing a text with a test example."""

    test: np.ndarray
    train: np.ndarray
    dropped: int


def normalise(text: str) -> str:
    """Case-folded words joined by single spaces: how texts are compared for equality."""
    return " ".join(words(text))


@dataclass
class TrainTestSplit:
    train: list[Example]
    test: list[Example]
    dropped: int  # examples left out of train because they share a text with the test set


def procedures_split(
    procedures: Sequence[ProcedureText], *, test_share: float, seed: int
) -> tuple[list[ProcedureText], list[ProcedureText]]:
    """The split by procedure: round(test_share x n) procedures drawn with the seed (in pk order first) are
    test, the rest train."""
    ordered = sorted(procedures, key=lambda p: pk_order(p.pk))
    chosen = set(
        np.random.default_rng([seed, len(TASKS)])
        .choice(len(ordered), size=round(test_share * len(ordered)), replace=False)
        .tolist()
    )
    return [p for i, p in enumerate(ordered) if i in chosen], [
        p for i, p in enumerate(ordered) if i not in chosen
    ]


def split_train_test(examples: Sequence[Example], *, test_size: int, seed: int) -> TrainTestSplit:
    """§3.4: `test_size` examples drawn at random are the test set; the training set is the rest, minus any
    example whose prompt or a candidate (normalised) is the prompt or a candidate of a test example. The rule
    as a list of examples: a build runs split_kept, its form on arrays across tasks, which the tests check
    against this one."""
    if not 0 <= test_size <= len(examples):
        raise ValueError(f"test_size must be between 0 and {len(examples)}, got {test_size}")
    in_test = _test_mask(len(examples), test_size, seed)
    test = [e for e, t in zip(examples, in_test, strict=True) if t]
    test_texts = {normalise(text) for e in test for text in (e.prompt, *e.candidates)}
    train: list[Example] = []
    dropped = 0
    for example, is_test in zip(examples, in_test, strict=True):
        if is_test:
            continue
        if any(normalise(text) in test_texts for text in (example.prompt, *example.candidates)):
            dropped += 1
        else:
            train.append(example)
    return TrainTestSplit(train=train, test=test, dropped=dropped)


def _test_mask(n: int, size: int, seed: int) -> np.ndarray:
    """Which of n examples are test: `size` of them drawn without replacement with the seed."""
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=size, replace=False)] = True
    return mask


def split_kept(kept: dict[str, Kept], *, test_share: float, seed: int) -> dict[str, KeptSplit]:
    """split_train_test on every task at once, as arrays: per task round(test_share x n) examples drawn with
    the seed are test; train is the rest minus any example sharing a normalised text (prompt or candidate)
    with a test example of any task."""
    ids = {task: examples.text_ids() for task, examples in kept.items()}
    in_test = {
        task: _test_mask(len(examples), round(test_share * len(examples)), seed)
        for task, examples in kept.items()
    }
    test_ids = np.unique(np.concatenate([ids[task][in_test[task]].ravel() for task in kept] or [[]]))
    splits = {}
    for task in kept:
        shares = np.isin(ids[task], test_ids).any(axis=1)
        train = ~in_test[task] & ~shares
        splits[task] = KeptSplit(
            np.flatnonzero(in_test[task]), np.flatnonzero(train), int((~in_test[task] & shares).sum())
        )
    return splits
