"""The appendix D filters, each on a crafted example it must remove and one it must keep."""

from __future__ import annotations

import math
from functools import partial

import pytest

from goal_step.build import (
    GOAL_INFERENCE,
    STEP_INFERENCE,
    Corpus,
    ProcedureText,
    prepare_corpus,
)
from goal_step.corpus import Draft
from goal_step.filters import (
    content_words,
    filter_name,
    informativeness,
    length_filter,
    lexical_overlap_filter,
    markup_in,
    similarity_filter,
    stem,
    tfidf_filter,
)
from tests.goal_step.synthetic import WordEmbedding

EMBED = WordEmbedding(dim=512)  # wide enough that texts sharing no word are nearly orthogonal


def _corpus(*procedures: ProcedureText) -> Corpus:
    return prepare_corpus(procedures, embed=EMBED)


def _draft(corpus: Corpus, task: str, prompt: str, candidates: list[str], answer: int = 0) -> Draft:
    item = {text: i for i, text in enumerate(corpus.texts)}
    return Draft(task, item[prompt], tuple(item[c] for c in candidates), answer)


KITCHEN = (
    ProcedureText(1, "Bake sourdough bread", ["Feed the starter", "Knead the dough", "Serve!"], "Food"),
    ProcedureText(2, "Paint a fence", ["Sand the old boards", "Apply a primer coat"], "Home"),
    ProcedureText(3, "Train a puppy", ["Reward good behaviour", "Keep sessions short"], "Pets"),
    ProcedureText(4, "Fix a flat tyre", ["Find the puncture", "Patch the inner tube"], "Cars"),
)


def test_it_removes_examples_with_a_too_short_text() -> None:
    corpus = _corpus(*KITCHEN)
    short = _draft(
        corpus, STEP_INFERENCE, "Bake sourdough bread", ["Serve!", "Sand the old boards", "Find the puncture"]
    )
    assert length_filter(short, corpus) == "candidate 0 'Serve!' has 1 word(s), fewer than 2"
    good = _draft(
        corpus,
        STEP_INFERENCE,
        "Bake sourdough bread",
        ["Feed the starter", "Sand the old boards", "Find the puncture"],
    )
    assert length_filter(good, corpus) is None
    assert partial(length_filter, min_words=4)(good, corpus) is not None


def test_it_removes_examples_whose_prompt_shares_a_content_word_with_a_candidate() -> None:
    corpus = _corpus(
        ProcedureText(1, "Bake sourdough bread", ["Knead the bread dough", "Feed the starter"], "Food"),
        ProcedureText(2, "Paint a fence", ["Sand the old boards", "Baking soda cleans brushes"], "Home"),
        ProcedureText(3, "Train a puppy", ["Reward good behaviour", "Keep the sessions short"], "Pets"),
    )
    overlapping = _draft(
        corpus, STEP_INFERENCE, "Bake sourdough bread", ["Knead the bread dough", "Sand the old boards"]
    )
    assert lexical_overlap_filter(overlapping, corpus) == "the prompt and candidate 0 share bread"
    # through the stemmer: 'Bake' and 'Baking' meet, and it is any candidate, not only the answer
    stemmed = _draft(
        corpus, STEP_INFERENCE, "Bake sourdough bread", ["Feed the starter", "Baking soda cleans brushes"]
    )
    assert lexical_overlap_filter(stemmed, corpus) == "the prompt and candidate 1 share bak"
    # stopwords ('the', 'a') do not count
    good = _draft(corpus, STEP_INFERENCE, "Paint a fence", ["Sand the old boards", "Keep the sessions short"])
    assert lexical_overlap_filter(good, corpus) is None


def test_it_removes_examples_with_an_uninformative_step() -> None:
    procedures = [
        ProcedureText(
            pk, f"Goal number{pk}", ["Gather your materials", f"Use the tool{pk} carefully"], f"t{pk % 5}"
        )
        for pk in range(1, 31)
    ]
    corpus = _corpus(*procedures)
    generic = _draft(
        corpus, STEP_INFERENCE, "Goal number1", ["Gather your materials", "Use the tool2 carefully"]
    )
    reason = tfidf_filter(generic, corpus)
    assert reason == "candidate 0 'Gather your materials' has no word with tf-idf >= 3 (best 0.00)"
    specific = _draft(
        corpus, STEP_INFERENCE, "Goal number1", ["Use the tool1 carefully", "Use the tool2 carefully"]
    )
    assert tfidf_filter(specific, corpus) is None  # tool1 is in 1 procedure of 30: ln 30 = 3.4
    # Goal Inference: the prompt is the step that is checked
    goal = _draft(corpus, GOAL_INFERENCE, "Gather your materials", ["Goal number1", "Goal number2"])
    assert tfidf_filter(goal, corpus) is not None


def test_it_removes_examples_whose_negative_is_close_to_a_step_of_the_prompt_goal() -> None:
    corpus = _corpus(
        ProcedureText(1, "Wash a car", ["Rinse the car body with a hose", "Dry with a chamois"], "Cars"),
        ProcedureText(2, "Clean a bike", ["Rinse the car body with a hose gently", "Oil the chain"], "Sport"),
        ProcedureText(3, "Water a lawn", ["Set the sprinkler timer", "Check soil moisture"], "Home"),
    )
    close = _draft(
        corpus,
        STEP_INFERENCE,
        "Wash a car",
        ["Dry with a chamois", "Rinse the car body with a hose gently", "Set the sprinkler timer"],
    )
    reason = similarity_filter(close, corpus)
    assert reason is not None and reason.startswith("negative 'Rinse the car body with a hose gently' is 0.9")
    far = _draft(
        corpus,
        STEP_INFERENCE,
        "Wash a car",
        ["Dry with a chamois", "Oil the chain", "Set the sprinkler timer"],
    )
    assert similarity_filter(far, corpus) is None
    # Goal Inference: the prompt step against the steps of each negative goal
    ambiguous = _draft(
        corpus, GOAL_INFERENCE, "Rinse the car body with a hose", ["Wash a car", "Clean a bike"]
    )
    assert "a step of the negative goal 'Clean a bike'" in (similarity_filter(ambiguous, corpus) or "")
    clear = _draft(corpus, GOAL_INFERENCE, "Dry with a chamois", ["Wash a car", "Water a lawn"])
    assert similarity_filter(clear, corpus) is None


def test_it_scores_tfidf_by_hand() -> None:
    documents = [[["kettl", "boil"], ["boil", "water"]], [["water", "plant"]], [["sun"]]]
    scores = informativeness(documents)
    assert scores[0] == [pytest.approx(2 * math.log(3)), pytest.approx(2 * math.log(3))]
    assert scores[1] == [pytest.approx(math.log(3))]
    assert informativeness([[[]]]) == [[0.0]]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("bake", "bak"),
        ("baking", "bak"),
        ("baked", "bak"),
        ("berries", "berry"),
        ("glasses", "glass"),
        ("need", "need"),
    ],
)
def test_it_stems_crudely(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_it_drops_stopwords_and_names_filters() -> None:
    assert content_words("Don't leave the kettle on!") == ["leav", "kettl"]
    assert filter_name(partial(length_filter, min_words=3)) == "length"
    assert filter_name(tfidf_filter) == "tfidf"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"smallUrl":"https:\\/\\/www.wikihow.com\\/images\\/thumb\\/Step-1.jpg","bigUrl":"x"}', "JSON"),
        ('["Step one", "Step two"]', "JSON"),
        ("Click <a href='/settings'>Settings</a> at the top", "HTML"),
        ("Wrap it in foil<br>and bake", "HTML"),
        ("Add salt &amp; pepper", "HTML"),
        ("Read more at https://example.org/guide", "a URL"),
        ("Visit www.wikihow.com for pictures", "a URL"),
        ("Save to images\\/thumb", "a URL"),
        ("Add salt & pepper to taste", ""),
        ("Press <Enter> to confirm", ""),
        ("Keep the dough {covered} overnight", ""),
        ('Say "yes", then "no"', ""),
        ("Cut a 3/4 inch hole for the pipe", ""),
        ("Set the oven to 350°F (175°C)", ""),
    ],
)
def test_it_names_the_markup_a_scraped_step_carries(text: str, kind: str) -> None:
    assert markup_in(text) == kind
