"""How2Score from the database (SQL) against the reference formulas computed from the files (oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judging.h2e_export import h2e_export
from judging.h2e_import import h2e_import
from judging.models import Generator, Judge
from judging.selectors import how2score_for, how2score_leaderboard, how2score_topics_for
from tests.h2e_trees import (
    EXAMPLES,
    JUDGE_A,
    GeneratorSpec,
    completion_for,
    failure,
    generation_record,
    judgment_record,
    write_run,
)

from .oracle import reference_aggregate

pytestmark = pytest.mark.django_db

GEN = GeneratorSpec("allenai/OLMo-2-7B", "e5e5e5e5e5e5", backend="vllm", provider="local")
F = [failure("Skips a step.", [1], [1])]


def _case(tmp_path: Path, verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run judged by JUDGE_A with one verdict per example; returns the judgment records written."""
    examples = EXAMPLES[: len(verdicts)]
    preds = {ex.source_example_id: completion_for(ex, "olmo") for ex in examples}
    generations = [
        generation_record(
            GEN, ex, completion=preds[ex.source_example_id][0], predicted=preds[ex.source_example_id][1]
        )
        for ex in examples
    ]
    judgments = [
        judgment_record(JUDGE_A, ex, preds[ex.source_example_id][1], **verdict)
        for ex, verdict in zip(examples, verdicts, strict=True)
    ]
    write_run(tmp_path / "tree", GEN, generations, {JUDGE_A: judgments})
    assert h2e_import(out_root=tmp_path / "tree").ok
    return judgments


def _db_scores() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    generator = Generator.objects.get(generator_id=GEN.generator_id)
    judge = Judge.objects.get(judge_id=JUDGE_A.judge_id)
    summary = how2score_for(generator_pk=generator.pk, judge_pk=judge.pk).summary_json()
    topics = how2score_topics_for(generator_pk=generator.pk, judge_pk=judge.pk)
    rows = [score.by_topic_row(topic) for topic, score in topics]
    if any("n_parse_failed" in r for r in rows):
        rows = [{**r, "n_parse_failed": r.get("n_parse_failed", "")} for r in rows]
    return summary, rows


CASES = {
    "all parse failures": [{"parse_failed": True}] * 4,
    "no failures at all": [{}] * 3,
    "has_failure true with n_failures 0": [{"has_failure": True, "n_failures": 0}, {}, {"failures": F}],
    "n_failures counted without has_failure": [{"has_failure": False, "n_failures": 2}, {}],
    "mixed with a topic of only parse failures": [
        {"failures": F},
        {},
        {"failures": F * 2},
        {"parse_failed": True},
        {"parse_failed": True},
        {"failures": F},
    ],
}


@pytest.mark.parametrize("verdicts", list(CASES.values()), ids=list(CASES))
def test_it_matches_the_reference_formulas(tmp_path: Path, verdicts: list[dict[str, Any]]) -> None:
    records = _case(tmp_path, verdicts)
    expected_summary, expected_rows = reference_aggregate(records)
    summary, rows = _db_scores()
    assert summary == expected_summary
    assert rows == expected_rows


def test_it_scores_zero_when_every_example_is_a_parse_failure(tmp_path: Path) -> None:
    _case(tmp_path, CASES["all parse failures"])
    [row] = how2score_leaderboard()
    assert row.score.n_examples == 0
    assert row.score.how2score_percent == 0.0 and row.score.strict_how2score_percent == 0.0
    assert row.score.n_parse_failed == 4


def test_it_counts_parse_failures_as_failures_in_the_strict_score(tmp_path: Path) -> None:
    _case(tmp_path, CASES["mixed with a topic of only parse failures"])
    [row] = how2score_leaderboard()
    assert row.score.how2score_percent == pytest.approx(100.0 * 1 / 4)  # 1 clean of 4 scored
    assert row.score.strict_how2score_percent == pytest.approx(100.0 * 1 / 6)  # 1 clean of 6 judged


def test_it_has_no_leaderboard_row_without_judgments() -> None:
    assert how2score_leaderboard() == []


def test_it_exports_the_summary_the_reference_would_compute(tmp_path: Path) -> None:
    _case(tmp_path, CASES["has_failure true with n_failures 0"])
    h2e_export(out_root=tmp_path / "out")
    [judgments] = list((tmp_path / "out").glob("*/judgments/*/judgments.jsonl"))
    records = [json.loads(line) for line in judgments.read_text(encoding="utf-8").splitlines()]
    expected, _ = reference_aggregate(records)
    assert json.loads((judgments.parent / "aggregate" / "summary.json").read_text()) == expected


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 2), (7, 10), (499, 500), (500, 500), (250, 500)])
def test_it_gives_how2score_the_wilson_interval_scipy_gives(k: int, n: int) -> None:
    from scipy.stats import binomtest

    from judging.selectors import How2Score

    score = How2Score(total=n + 3, n_parse_failed=3, n_with_failures=n - k, sum_failures=n - k)
    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = score.interval_percent or (-1.0, -1.0)
    assert low == pytest.approx(100 * expected.low, abs=1e-5) and high == pytest.approx(
        100 * expected.high, abs=1e-5
    )
    # strict: the 3 parse failures count as failures, out of every judged example
    strict = binomtest(k, n + 3).proportion_ci(confidence_level=0.95, method="wilson")
    s_low, s_high = score.strict_interval_percent or (-1.0, -1.0)
    assert s_low == pytest.approx(100 * strict.low, abs=1e-5) and s_high == pytest.approx(
        100 * strict.high, abs=1e-5
    )
    assert How2Score(0, 0, 0, 0).interval_percent is None
