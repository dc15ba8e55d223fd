"""The train/test split: no prompt or candidate of the test set in the training set (paper §3.4)."""

from __future__ import annotations

import pytest

from goal_step.build import (
    GOAL_INFERENCE,
    STEP_INFERENCE,
    STEP_ORDERING,
    Example,
    build_all,
    draft_goal_inference,
    draft_step_inference,
    draft_step_ordering,
    prepare_corpus,
)
from goal_step.split import normalise, split_kept, split_train_test
from tests.goal_step.synthetic import WordEmbedding, synthetic_procedures


def _texts(examples: list[Example]) -> set[str]:
    return {normalise(t) for e in examples for t in (e.prompt, *e.candidates)}


def test_it_shares_no_prompt_or_candidate_between_train_and_test() -> None:
    examples, _ = build_all(synthetic_procedures(300, seed=6), embed=WordEmbedding(), seed=1)
    task = examples[STEP_INFERENCE]
    split = split_train_test(task, test_size=100, seed=3)
    assert len(split.test) == 100
    assert not _texts(split.train) & _texts(split.test)
    assert len(split.train) + split.dropped + len(split.test) == len(task)
    assert split.dropped > 0 and split.train
    assert split_train_test(task, test_size=100, seed=3) == split


def test_it_compares_texts_normalised() -> None:
    test = Example("step_inference", "Make Tea", ["Boil the water.", "b", "c", "d"], 0)
    near = Example("step_inference", "Other goal", ["boil the  WATER", "e", "f", "g"], 0)
    apart = Example("step_inference", "Third goal", ["h", "i", "j", "k"], 0)
    seed = next(
        seed
        for seed in range(100)
        if split_train_test([test, near, apart], test_size=1, seed=seed).test == [test]
    )
    split = split_train_test([test, near, apart], test_size=1, seed=seed)
    assert split.train == [apart] and split.dropped == 1


def test_it_refuses_a_test_set_larger_than_the_examples() -> None:
    with pytest.raises(ValueError, match="test_size must be between 0 and 0"):
        split_train_test([], test_size=1, seed=0)


def test_the_split_on_arrays_is_the_split_on_examples_across_tasks() -> None:
    """split_kept (what a build runs) keeps, per task, what split_train_test keeps minus the train examples
    sharing a text with another task's test examples."""
    corpus = prepare_corpus(synthetic_procedures(200, seed=9), embed=WordEmbedding())
    kept = {
        STEP_INFERENCE: draft_step_inference(corpus, seed=2)[0],
        GOAL_INFERENCE: draft_goal_inference(corpus, seed=2)[0],
        STEP_ORDERING: draft_step_ordering(corpus, seed=2)[0],
    }
    splits = split_kept(kept, test_share=0.02, seed=5)
    by_examples = {
        task: split_train_test(k.examples(), test_size=round(0.02 * len(k)), seed=5)
        for task, k in kept.items()
    }
    test_texts = {
        normalise(t) for s in by_examples.values() for e in s.test for t in (e.prompt, *e.candidates)
    }
    trained = 0
    for task, split in splits.items():
        expected = by_examples[task]
        assert kept[task].examples(split.test) == expected.test
        train = [
            e for e in expected.train if not {normalise(t) for t in (e.prompt, *e.candidates)} & test_texts
        ]
        assert kept[task].examples(split.train) == train
        trained += len(train)
        assert split.dropped == len(kept[task]) - len(expected.test) - len(train)
    assert trained
