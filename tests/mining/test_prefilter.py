"""The heuristics filter at and around each threshold (h2e-compat.md "Mining rules", paper §B.3)."""

from __future__ import annotations

import pytest

from mining.config import PrefilterConfig
from mining.prefilter import ngram_repetition_rate, normalise_step, prefilter_steps

PAPER = PrefilterConfig()


def distinct_steps(n: int, words: int) -> list[str]:
    """n steps of `words` words each, no word shared between steps."""
    return [" ".join(f"w{i}x{j}" for j in range(words)) for i in range(n)]


def with_repeats(n: int, repeats: int, words: int) -> list[str]:
    """n steps of `words` words, the last `repeats` of them copies of the first step."""
    steps = distinct_steps(n - repeats, words)
    return steps + [steps[0]] * repeats


def test_it_normalises_case_punctuation_and_spaces() -> None:
    assert normalise_step("  Stir the SOUP,   then-serve!! ") == ["stir", "the", "soup", "then", "serve"]


def test_it_computes_the_rate_as_repeats_over_total() -> None:
    steps = ["a b c", "a b c", "a b d"]  # bigrams: ab x3, bc x2, bd x1 -> (2 + 1) / 6
    assert ngram_repetition_rate(steps, 2) == pytest.approx(3 / 6)
    assert ngram_repetition_rate(steps, 3) == pytest.approx(1 / 3)


def test_it_builds_ngrams_within_each_step_not_across_steps() -> None:
    assert ngram_repetition_rate(["x y", "y x"], 2) == 0.0
    assert ngram_repetition_rate(["one", "two"], 2) == 0.0  # no bigram at all


@pytest.mark.parametrize(("n_steps", "passed"), [(4, False), (5, True), (15, True), (16, False)])
def test_it_keeps_five_to_fifteen_steps_by_default(n_steps: int, passed: bool) -> None:
    verdict = prefilter_steps(distinct_steps(n_steps, 5), PAPER)
    assert verdict.passed is passed
    if not passed:
        assert f"{n_steps} steps, outside 5-15" == verdict.reason


def test_it_takes_the_step_range_from_the_config() -> None:
    config = PrefilterConfig(min_steps=4, max_steps=6)
    assert prefilter_steps(distinct_steps(4, 5), config).passed
    assert not prefilter_steps(distinct_steps(7, 5), config).passed


@pytest.mark.parametrize(
    ("n", "repeats", "words", "rate", "passed", "reason"),
    [
        # two-word steps: only bigrams; 0.40 rejects, just under passes
        (10, 4, 2, 0.40, False, "2-gram repetition 0.400 >= 0.40"),
        (13, 5, 2, 5 / 13, True, ""),
        # three-word steps: bigram and trigram rates equal; 0.357 is under 0.40 but over 0.35
        (14, 5, 3, 5 / 14, False, "3-gram repetition 0.357 >= 0.35"),
        (15, 5, 3, 5 / 15, True, ""),
        # four-word steps: 0.30 rejects by the 4-gram rate, 0.2857 passes
        (10, 3, 4, 0.30, False, "4-gram repetition 0.300 >= 0.30"),
        (14, 4, 4, 4 / 14, True, ""),
    ],
)
def test_it_rejects_repetition_at_each_threshold(
    n: int, repeats: int, words: int, rate: float, passed: bool, reason: str
) -> None:
    steps = with_repeats(n, repeats, words)
    assert ngram_repetition_rate(steps, 2) == pytest.approx(rate)
    verdict = prefilter_steps(steps, PAPER)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_it_reports_the_rates_it_measured() -> None:
    verdict = prefilter_steps(with_repeats(13, 5, 2), PAPER)
    assert verdict.payload(13) == {"n_steps": 13, "ngram_repetition": {"2": 0.384615, "3": 0.0, "4": 0.0}}


def test_it_counts_only_the_steps_that_are_there_unlike_the_reference() -> None:
    """A deliberate deviation (docs/guides/researcher/benchmark.md, "How it differs from the reference"): a
    5-item extraction with one blank step has 4 steps here and fails the 5-15 check; the reference counts the
    blank and passes it."""
    import json

    from mining.stages import parse_stage_output

    extraction = {
        "has_valid_process": True,
        "goal": "Bake bread",
        "steps": ["Mix", "Knead", " ", "Rise", "Bake"],
    }
    steps = parse_stage_output("extraction", json.dumps(extraction)).payload["steps"]
    assert steps == ["Mix", "Knead", "Rise", "Bake"]
    verdict = prefilter_steps(steps, PAPER)
    assert not verdict.passed and verdict.reason == "4 steps, outside 5-15"
    assert len(extraction["steps"]) == 5  # what the reference's count would be: inside 5-15
