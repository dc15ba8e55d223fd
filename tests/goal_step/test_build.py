"""Building the three tasks: negatives from other topics, label reassignment, uniform answers, seeds."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from goal_step.artifacts import candidates_only_baseline
from goal_step.build import (
    GOAL_INFERENCE,
    STEP_INFERENCE,
    STEP_ORDERING,
    Corpus,
    ProcedureText,
    build_all,
    build_step_inference,
    build_step_ordering,
    prepare_corpus,
)
from goal_step.corpus import Draft
from tests.goal_step.synthetic import WordEmbedding, synthetic_procedures

EMBED = WordEmbedding()
WORDS = [
    "oven",
    "flour",
    "sugar",
    "paint",
    "brush",
    "sand",
    "drill",
    "screw",
    "wash",
    "rinse",
    "dry",
    "fold",
    "pack",
    "wrap",
    "tie",
    "lift",
    "plant",
    "water",
]


def _group(pk: object, topic: str | None) -> object:
    return topic if topic is not None else ("no topic", pk)


def _tiny_procedures(topics: list[str | None]) -> list[ProcedureText]:
    rng = random.Random(len(topics))
    return [
        ProcedureText(
            pk,
            f"Goal {pk} " + " ".join(rng.sample(WORDS, 2)),
            [" ".join(rng.sample(WORDS, 3)) + f" s{pk}x{i}" for i in range(rng.randint(1, 4))],
            topic,
            ordered=True,
        )
        for pk, topic in enumerate(topics, start=1)
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topics=st.lists(st.sampled_from(["a", "b", "c", "d", "e", None]), min_size=2, max_size=18),
    n_candidates=st.integers(2, 4),
    seed=st.integers(0, 2**16),
)
def test_it_never_draws_a_negative_from_the_positives_topic(
    topics: list[str | None], n_candidates: int, seed: int
) -> None:
    procedures = _tiny_procedures(topics)
    by_pk = {p.pk: p for p in procedures}
    examples, funnels = build_all(
        procedures, embed=EMBED, seed=seed, n_candidates=n_candidates, filters=(), ordering_filters=()
    )
    for task in (STEP_INFERENCE, GOAL_INFERENCE):
        for example in examples[task]:
            groups = [_group(pk, by_pk[pk].topic) for pk in example.meta["candidate_pks"]]
            answer = groups[example.answer]
            assert all(g != answer for i, g in enumerate(groups) if i != example.answer)
            assert len(set(groups)) == n_candidates  # pairwise: whichever had been drawn as the positive
        funnel = funnels[task]
        assert (
            funnel.candidates_in
            == sum(funnel.removed.values()) + funnel.kept
            == funnel.kept + funnel.removed["too_few_negatives"] + funnel.removed["duplicate"]
        )
        prompts = [(e.prompt, frozenset(e.candidates)) for e in examples[task]]
        assert len(set(prompts)) == len(prompts)
    distinct_groups = len({_group(p.pk, p.topic) for p in procedures})
    if distinct_groups >= n_candidates:
        step_inference = funnels[STEP_INFERENCE]
        assert step_inference.kept + step_inference.removed["duplicate"] == sum(
            len(p.steps) for p in procedures
        )


def test_it_makes_the_prompt_the_goal_or_step_of_the_reassigned_positive() -> None:
    procedures = synthetic_procedures(150, seed=3)
    by_pk = {p.pk: p for p in procedures}
    examples, _ = build_all(procedures, embed=EMBED, seed=5, filters=())
    moved = Counter()
    for example in examples[STEP_INFERENCE]:
        source = by_pk[example.source_pk]
        assert example.prompt == source.goal
        assert example.candidates[example.answer] in source.steps
        assert example.meta["candidate_pks"][example.answer] == example.source_pk
        moved[example.source_pk != example.meta["seed_pk"]] += 1
    for example in examples[GOAL_INFERENCE]:
        source = by_pk[example.source_pk]
        assert example.candidates[example.answer] == source.goal
        assert example.prompt in source.steps
        moved[example.source_pk != example.meta["seed_pk"]] += 1
    # reassignment moves the positive away from the searched-around candidate three times in four
    assert 0.7 < moved[True] / sum(moved.values()) < 0.8


def test_it_puts_the_answer_anywhere_and_the_candidates_only_baseline_at_chance() -> None:
    """2,000 synthetic procedures with the default filters (takes a few seconds)."""
    procedures = synthetic_procedures(2_000, seed=11)
    examples, funnels = build_all(procedures, embed=EMBED, seed=2024)
    everything = [e for task in examples.values() for e in task]
    reports = candidates_only_baseline(everything, embed=EMBED)
    for task, n_candidates in ((STEP_INFERENCE, 4), (GOAL_INFERENCE, 4), (STEP_ORDERING, 2)):
        assert len(examples[task]) > 3_000, funnels[task].lines()
        positions = Counter(e.answer for e in examples[task])
        assert chisquare([positions[i] for i in range(n_candidates)]).pvalue > 0.001
        assert reports[task].at_chance, reports[task].line()
        assert reports[task].chance == 1 / n_candidates


def test_it_leaves_the_artifact_without_reassignment() -> None:
    procedures = synthetic_procedures(300, seed=11)
    examples, _ = build_all(procedures, embed=EMBED, seed=2024, reassign=False)
    reports = candidates_only_baseline(examples[STEP_INFERENCE] + examples[GOAL_INFERENCE], embed=EMBED)
    for task in (STEP_INFERENCE, GOAL_INFERENCE):
        assert reports[task].share is not None and reports[task].share > 0.9, reports[task].line()
        assert not reports[task].at_chance


def _refuse_central_answers(draft: Draft, corpus: Corpus) -> str | None:
    """A filter that reads the answer: it refuses examples whose answer is the most central candidate."""
    rows = corpus.vectors_of(list(draft.candidates))
    similarity = rows @ rows.T
    central = int(np.argmax(similarity.sum(axis=1) - np.diagonal(similarity)))
    return "the answer is the most central candidate" if central == draft.answer else None


def test_it_filters_every_labeling_when_label_blind() -> None:
    corpus = prepare_corpus(synthetic_procedures(120, seed=4), embed=EMBED)
    paper, _ = build_step_inference(corpus, seed=1, filters=(_refuse_central_answers,), label_blind=False)
    blind, funnel = build_step_inference(corpus, seed=1, filters=(_refuse_central_answers,))
    # filtering only the drawn labeling, as the paper does, leaves a signal a candidates-only model reads
    assert len(paper) > 100
    assert candidates_only_baseline(paper, embed=EMBED)[STEP_INFERENCE].correct == 0
    # label-blind, every labeling is checked: each candidate set has a central candidate, so none is kept
    assert blind == [] and funnel.removed["_refuse_central_answers"] == funnel.candidates_in


def test_it_drops_candidates_whose_procedures_share_a_goal() -> None:
    procedures = [
        ProcedureText(1, "Make pancakes", ["Whisk the eggs and flour"], "Food"),
        ProcedureText(2, "Make Pancakes!", ["Whisk the eggs with flour"], "Home"),
    ]
    examples, funnel = build_step_inference(
        prepare_corpus(procedures, embed=EMBED), seed=0, n_candidates=2, filters=()
    )
    assert examples == [] and funnel.removed == {"too_few_negatives": 0, "same_goal": 2, "duplicate": 0}


def test_it_is_reproducible_with_a_seed_whatever_the_input_order() -> None:
    procedures = synthetic_procedures(200, seed=8)
    first = build_all(procedures, embed=EMBED, seed=42)
    shuffled = procedures[:]
    random.Random(1).shuffle(shuffled)
    assert build_all(shuffled, embed=EMBED, seed=42) == first
    other = build_all(procedures, embed=EMBED, seed=43)
    assert other[0][STEP_INFERENCE] != first[0][STEP_INFERENCE]


def test_it_orders_only_procedures_marked_ordered_or_chosen_by_the_predicate() -> None:
    procedures = [
        ProcedureText(1, "Make tea", ["Boil the water", "Steep the leaves", "Pour the tea"], "a", True),
        ProcedureText(2, "Stay healthy", ["Sleep well", "Eat vegetables"], "b", False),
        ProcedureText(3, "Tie a knot", ["Cross the ends", "Pull them tight"], "c", None),
    ]
    corpus = prepare_corpus(procedures, embed=EMBED)
    examples, funnel = build_step_ordering(corpus, seed=0)
    assert [e.source_pk for e in examples] == [1, 1]
    assert (
        funnel.removed == {"not_ordered": 2, "markup": 0, "distinct": 0, "duplicate": 0} and funnel.kept == 2
    )
    for example in examples:
        first, second = example.meta["step_numbers"]
        assert example.candidates[example.answer] == procedures[0].steps[min(first, second) - 1]
        assert abs(first - second) == 1
    chosen, _ = build_step_ordering(corpus, seed=0, ordered=lambda p: p.pk == 3)
    assert [(e.prompt, sorted(e.candidates)) for e in chosen] == [("Tie a knot", sorted(procedures[2].steps))]


def test_it_removes_identical_adjacent_steps_from_step_ordering() -> None:
    procedures = [ProcedureText(1, "Stir the soup", ["Stir it.", "stir it", "Serve hot soup"], "a", True)]
    examples, funnel = build_step_ordering(prepare_corpus(procedures, embed=EMBED), seed=0)
    assert funnel.removed["distinct"] == 1 and len(examples) == 1
    assert "same text" in funnel.reasons["distinct"][0]


def test_it_counts_every_draft_in_the_funnel() -> None:
    examples, funnels = build_all(synthetic_procedures(300, seed=2), embed=EMBED, seed=0)
    for task, funnel in funnels.items():
        assert funnel.candidates_in == sum(funnel.removed.values()) + funnel.kept
        assert funnel.kept == len(examples[task])
    assert list(funnels[STEP_INFERENCE].removed) == [
        "too_few_negatives",
        "same_goal",
        "markup",
        "length",
        "lexical_overlap",
        "tfidf",
        "similarity",
        "duplicate",
    ]
    assert funnels[STEP_INFERENCE].lines()[-1].startswith("  = ")


@pytest.mark.parametrize(
    ("procedures", "message"),
    [
        ([ProcedureText(1, "A goal", ["a step"]), ProcedureText(1, "B goal", ["b step"])], "appears twice"),
        ([ProcedureText(1, "  ", ["a step"])], "goal is empty"),
        ([ProcedureText(7, "A goal", ["a step", ""])], "procedure 7: step 2 is empty"),
    ],
)
def test_it_refuses_malformed_procedures(procedures: list[ProcedureText], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        prepare_corpus(procedures, embed=EMBED)


def test_it_normalises_what_the_embedding_returns() -> None:
    corpus = prepare_corpus(_tiny_procedures(["a", "b"]), embed=lambda texts: 3 * EMBED(texts))
    assert np.allclose(np.linalg.norm(corpus.vectors, axis=1), 1, atol=1e-5)
    with pytest.raises(ValueError, match="embed returned shape"):
        prepare_corpus(_tiny_procedures(["a", "b"]), embed=lambda texts: np.zeros((1, 4)))


@pytest.mark.parametrize("n_candidates", [1, 27])
def test_it_refuses_more_candidates_than_option_letters(n_candidates: int) -> None:
    """#19 item 4: options are lettered A to Z (goal_step/options.py), the bound the importer and the
    multiple-choice study share."""
    with pytest.raises(ValueError, match=f"n_candidates: expected 2 to 26 .*, got {n_candidates}"):
        build_all(synthetic_procedures(20, seed=1), embed=EMBED, seed=0, n_candidates=n_candidates)
