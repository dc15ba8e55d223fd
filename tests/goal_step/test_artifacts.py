"""The candidates-only (centroid) baseline and its Wilson interval."""

from __future__ import annotations

import numpy as np
import pytest

from goal_step.artifacts import (
    ArtifactReport,
    candidates_only_baseline,
    centroid_choices,
    kept_baseline,
    wilson_interval,
)
from goal_step.build import (
    Example,
    draft_goal_inference,
    draft_step_inference,
    draft_step_ordering,
    prepare_corpus,
)
from h2e_site.stats import wilson_interval as judging_wilson
from tests.goal_step.synthetic import WordEmbedding, synthetic_procedures


def _embed(texts: list[str]) -> np.ndarray:
    """Two coordinates written in the text: 'x,y'."""
    return np.array([[float(v) for v in text.split(",")] for text in texts])


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (512, 2_000), (1, 1)])
def test_it_computes_the_same_interval_as_judging_stats(k: int, n: int) -> None:
    assert wilson_interval(k, n) == pytest.approx(judging_wilson(k, n))
    assert wilson_interval(0, 0) is None


def test_it_picks_the_candidate_closest_to_the_others() -> None:
    central = Example("step_inference", "goal", ["1,0", "1,1", "1,-1", "0,1"], answer=0)
    assert centroid_choices([central], embed=_embed) == [0]
    tie = Example("step_ordering", "goal", ["1,0", "0,1"], answer=1)
    assert centroid_choices([tie], embed=_embed) == [0]  # two candidates are always tied: the first


def test_it_reports_k_of_n_with_its_interval_per_task() -> None:
    examples = [
        Example("step_inference", "g", ["1,0", "1,1", "1,-1", "0,1"], answer=i % 4) for i in range(40)
    ]
    report = candidates_only_baseline(examples, embed=_embed)["step_inference"]
    assert (report.correct, report.n, report.chance) == (10, 40, 0.25)
    assert report.at_chance and report.interval == pytest.approx(wilson_interval(10, 40))
    assert report.line().startswith(
        "step_inference: candidates-only baseline right on 10 of 40 (25.0%, 95 % CI"
    )
    far = ArtifactReport("goal_inference", correct=900, n=1_000, chance=0.25)
    assert not far.at_chance and far.share == 0.9
    assert not ArtifactReport("goal_inference", 0, 0, 0.25).at_chance


def test_the_baseline_on_kept_rows_is_the_baseline_on_the_examples_made() -> None:
    """What a build runs (kept_baseline: the corpus' vectors by item, positions of a Kept) equals
    candidates_only_baseline on the same examples made (an embedding function by text)."""
    embed = WordEmbedding()
    corpus = prepare_corpus(synthetic_procedures(150, seed=2), embed=embed)
    for draft in (draft_step_inference, draft_goal_inference, draft_step_ordering):
        kept, _ = (
            draft(corpus, seed=4, reassign=False)
            if draft is not draft_step_ordering
            else draft(corpus, seed=4)
        )
        halves = np.array_split(np.arange(len(kept)), 2)
        report = kept_baseline("t", [(kept, half) for half in halves])
        made = kept.examples()
        expected = candidates_only_baseline(made, embed=embed)[made[0].task]
        assert (report.correct, report.n, report.chance) == (expected.correct, expected.n, expected.chance)
        assert report.n == len(made) > 100
