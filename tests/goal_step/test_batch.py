"""The filters' batch forms (batch.py) say what the filters say, draft by draft, on random drafts; the
lexicon's arrays (lexicon.py) hold what the filters' functions compute text by text."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goal_step.batch import Drafts, batch_of, step_similarity
from goal_step.build import GOAL_INFERENCE, STEP_INFERENCE, STEP_ORDERING, Corpus, prepare_corpus
from goal_step.examples import ProcedureText
from goal_step.filters import (
    DEFAULT_FILTERS,
    content_words,
    distinct_filter,
    informativeness,
    length_filter,
    similarity_filter,
    tfidf_filter,
    words,
)
from tests.goal_step.synthetic import WordEmbedding, synthetic_procedures

EMBED = WordEmbedding()
CRAFTED = ProcedureText(  # markup twice and a one-word step: filters that synthetic text never fails
    9_001,
    "Hang a picture frame",
    ['{"smallUrl":"https:\\/\\/x.jpg"}', "Level the frame <b>twice</b>", "Admire!"],
    "Art",
)
CORPUS = prepare_corpus([*synthetic_procedures(40, seed=3), CRAFTED], embed=EMBED)
FILTERS = (
    *DEFAULT_FILTERS,
    distinct_filter,
    partial(length_filter, min_words=4),
    partial(tfidf_filter, min_tfidf=4.0),
    partial(similarity_filter, max_similarity=0.3),
)


def _random_drafts(task: str, rows: int, labelings: int, k: int, seed: int, corpus: Corpus) -> Drafts:
    rng = np.random.default_rng(seed)
    n, items = len(corpus.procedures), len(corpus.texts)
    steps = rng.integers(n, items, size=(rows, k))
    goals = rng.integers(0, n, size=(rows, labelings))
    if task == STEP_INFERENCE:
        candidates, prompts = steps, goals
    elif task == GOAL_INFERENCE:
        candidates, prompts = rng.integers(0, n, size=(rows, k)), steps[:, :labelings]
    else:
        candidates, prompts = steps, goals
    return Drafts(task, candidates, prompts, rng.integers(0, k, size=(rows, labelings)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    task=st.sampled_from([STEP_INFERENCE, GOAL_INFERENCE, STEP_ORDERING]),
    labelings=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_each_batch_form_says_what_its_filter_says(task: str, labelings: int, seed: int) -> None:
    k = 2 if task == STEP_ORDERING else 4
    drafts = _random_drafts(task, 60, min(labelings, k), k, seed, CORPUS)
    for check in FILTERS:
        expected = np.array(
            [
                [check(drafts.draft(r, lab), CORPUS) is not None for lab in range(drafts.prompts.shape[1])]
                for r in range(len(drafts))
            ]
        )
        assert (batch_of(check)(drafts, CORPUS) == expected).all(), check


def test_the_random_drafts_make_every_filter_fail_somewhere() -> None:
    """So that the comparison above compares failures too, not only passes."""
    drafts = _random_drafts(STEP_INFERENCE, 400, 4, 4, 1, CORPUS)
    drafts.candidates[0, :3] = CORPUS.step_items(len(CORPUS.procedures) - 1)
    for check in FILTERS:
        if check not in (distinct_filter, tfidf_filter):  # 41 procedures: a rare word scores ln 41 > 3
            assert batch_of(check)(drafts, CORPUS).any(), check
    assert batch_of(distinct_filter)(
        Drafts(STEP_ORDERING, np.array([[50, 50]]), np.array([[0]]), np.array([[0]])), CORPUS
    ).all()


def test_a_filter_without_a_batch_form_runs_draft_by_draft() -> None:
    calls = []

    def own(draft: object, corpus: Corpus) -> str | None:
        calls.append(draft)
        return "no" if len(calls) % 2 else None

    drafts = _random_drafts(STEP_INFERENCE, 5, 2, 4, 0, CORPUS)
    assert batch_of(own)(drafts, CORPUS).tolist() == [[True, False]] * 5 and len(calls) == 10


def test_step_similarity_is_the_best_cosine_to_a_step_of_the_procedure() -> None:
    rng = np.random.default_rng(0)
    items = rng.integers(0, len(CORPUS.texts), size=200)
    procedures = rng.integers(0, len(CORPUS.procedures), size=200)
    found = step_similarity(CORPUS, items, procedures)
    for item, procedure, value in zip(items, procedures, found, strict=True):
        steps = CORPUS.vectors[CORPUS.vector_rows[CORPUS.step_slice(int(procedure))]].astype(np.float32)
        assert value == pytest.approx(
            float((steps @ CORPUS.vectors[CORPUS.vector_rows[item]].astype(np.float32)).max()), abs=1e-5
        )


def test_the_lexicon_holds_what_the_filters_compute_text_by_text() -> None:
    documents = []
    for p, procedure in enumerate(CORPUS.procedures):
        texts = [procedure.goal, *procedure.steps]
        items = [p, *CORPUS.step_items(p)]
        assert [CORPUS.texts[i] for i in items] == texts
        for item, text in zip(items, texts, strict=True):
            assert CORPUS.tokens(item) == frozenset(content_words(text))
            assert CORPUS.word_counts[item] == len(words(text))
        documents.append([content_words(t) for t in texts])
    by_hand = informativeness(documents)
    for p, scores in enumerate(by_hand):
        assert CORPUS.informativeness[[p, *CORPUS.step_items(p)]] == pytest.approx(scores)
    assert CORPUS.markup.sum() == 2
