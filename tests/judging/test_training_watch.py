"""The statistics of a watched training run (judging/training/watch.py), by hand and against statsmodels and
scipy on the raw values: the per-bucket figures and their intervals, the bucket size, the least-squares trend,
and the length-gaming alarm's rule (ratio interval wholly outside [1 - τ, 1 + τ] while How2Score's slope over
the buckets so far is above 0)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from judging.training.watch import (
    MAX_POINTS,
    CallFigures,
    StepSums,
    bucket_of,
    bucket_size,
    buckets_of,
    length_gaming_alarm,
    mean_interval,
    run_watch,
    trend,
)


def call(h2s: int | None = 1, fmt: int | None = 1, ratio: float | None = 1.0, **more: object) -> CallFigures:
    fields = {"length": 1.0, "total": None, "from_store": False, "error": ""} | more
    total = fields.pop("total")
    if total is None and h2s is not None and fmt is not None:
        total = h2s + fmt + float(fields["length"])  # type: ignore[arg-type]
    return CallFigures(how2score=h2s, format=fmt, length_ratio=ratio, total=total, **fields)  # type: ignore[arg-type]


def test_it_computes_the_t_interval_of_the_mean_ratio_by_hand() -> None:
    sums = StepSums.of_calls([call(ratio=r) for r in (1.0, 1.2, 1.4)])
    low, high = mean_interval(sums.n_ratio, sums.ratio_sum, sums.ratio_squares) or (0, 0)
    # mean 1.2, s = 0.2, t(0.975, 2) = 4.302653: half-width 4.302653 * 0.2 / sqrt(3) = 0.496828
    assert (low, high) == pytest.approx((1.2 - 0.496828, 1.2 + 0.496828), abs=1e-6)
    assert mean_interval(1, 1.3, 1.69) is None
    assert mean_interval(3, 3.0, 3.0) == pytest.approx((1.0, 1.0))  # no spread: the mean itself


def test_its_intervals_match_statsmodels_on_the_raw_values() -> None:
    rng = random.Random(7)
    calls = [
        call(
            h2s=rng.choice([0, 1, 1, None]),
            fmt=rng.choice([0, 1, 1, None]),
            ratio=rng.uniform(0.7, 1.8),
            length=rng.random(),
            from_store=rng.random() < 0.3,
            error=rng.choice(["", "", "", "the judge failed: 400"]),
        )
        for _ in range(57)
    ]
    bucket = bucket_of(4, 4, 1, StepSums.of_calls(calls))
    scored = [c.how2score for c in calls if c.how2score is not None]
    assert bucket.n_scored == len(scored) and bucket.how2score == pytest.approx(np.mean(scored))
    assert bucket.how2score_interval == pytest.approx(
        proportion_confint(sum(scored), len(scored), method="wilson")
    )
    formats = [c.format for c in calls if c.format is not None]
    assert bucket.format_rate == pytest.approx(np.mean(formats))
    assert bucket.format_interval == pytest.approx(
        proportion_confint(sum(formats), len(formats), method="wilson")
    )
    among = [c.how2score for c in calls if c.format == 1 and c.how2score is not None]
    assert bucket.n_scored_format_ok == len(among)
    assert bucket.how2score_format_ok == pytest.approx(np.mean(among))
    assert bucket.how2score_format_ok_interval == pytest.approx(
        proportion_confint(sum(among), len(among), method="wilson")
    )
    ratios = [c.length_ratio for c in calls]
    assert bucket.ratio_mean == pytest.approx(np.mean(ratios))
    assert bucket.ratio_interval == pytest.approx(DescrStatsW(np.array(ratios)).tconfint_mean(0.05))
    assert bucket.length_mean == pytest.approx(np.mean([c.length for c in calls]))
    assert bucket.total_mean == pytest.approx(np.mean([c.total for c in calls if c.total is not None]))
    assert bucket.store_share == pytest.approx(sum(c.from_store for c in calls) / 57)
    assert bucket.n_errors == sum(bool(c.error) for c in calls) > 0


def test_a_wilson_interval_by_hand_and_the_empty_cases() -> None:
    bucket = bucket_of(0, 0, 1, StepSums.of_calls([call(h2s=1)] * 7 + [call(h2s=0)] * 3))
    assert bucket.how2score == 0.7
    assert bucket.how2score_interval == pytest.approx((0.396778, 0.892209), abs=1e-6)
    empty = bucket_of(0, 0, 1, StepSums.of_calls([call(h2s=None, fmt=None, ratio=None, length=None)]))
    assert empty.how2score is None and empty.how2score_interval is None and empty.ratio_interval is None
    assert empty.format_rate is None and empty.length_mean is None and empty.store_share == 0


def test_sums_add_up_as_the_calls_do() -> None:
    a, b = [call(h2s=1, ratio=1.1)] * 3, [call(h2s=0, fmt=0, ratio=1.5, from_store=True)] * 2
    assert StepSums.of_calls(a) + StepSums.of_calls(b) == StepSums.of_calls(a + b)


@pytest.mark.parametrize(
    ("steps", "size"),
    [
        ([0, 5, 7], 1),
        (list(range(100)), 1),
        (list(range(0, 10_000, 100)), 1),  # 100 distinct steps, however far apart: a row each
        (list(range(101)), 2),
        (list(range(1000)), 10),
        (list(range(1001)), 11),
    ],
)
def test_the_bucket_size_keeps_a_chart_to_a_hundred_points(steps: list[int], size: int) -> None:
    assert bucket_size(steps) == size
    found, buckets = buckets_of(dict.fromkeys(steps, StepSums.of_calls([call()])))
    assert found == size and len(buckets) <= MAX_POINTS
    assert sum(b.n_calls for b in buckets) == len(steps)
    assert all(b.first_step <= s <= b.last_step for b in buckets for s in [b.first_step + b.n_steps - 1])


def test_a_bucket_adds_up_its_steps() -> None:
    per_step = {s: StepSums.of_calls([call(h2s=s % 2, ratio=1 + s / 1000)]) for s in range(250)}
    size, buckets = buckets_of(per_step)
    assert size == 3 and buckets[1].label == "3\u20135" and buckets[1].n_calls == 3
    assert buckets[1].how2score == pytest.approx(2 / 3)  # steps 3 and 5 scored 1, step 4 scored 0
    assert buckets[-1].first_step == 249 and buckets[-1].n_steps == 1


def test_the_trend_is_the_least_squares_slope_by_hand() -> None:
    # x mean 1, y mean 1/3: sum (x - 1)(y - 1/3) = 0.3, sum (x - 1)^2 = 2
    assert trend([(0, 0.2), (1, 0.3), (2, 0.5)]) == pytest.approx(0.15)
    assert trend([(3, 0.5)]) is None and trend([(3, 0.5), (3, 0.6)]) is None


def _steps(
    ratios: list[float], scores: list[float], n: int = 10, spread: float = 0.05
) -> dict[int, StepSums]:
    """Per step: n calls with ratios mean ± spread, and round(score * n) of them scored 1."""
    per_step = {}
    for step, (ratio, score) in enumerate(zip(ratios, scores, strict=True)):
        passed = round(score * n)
        offsets = np.linspace(-spread, spread, n)
        per_step[step] = StepSums.of_calls(
            [call(h2s=int(i < passed), ratio=ratio + float(offsets[i])) for i in range(n)]
        )
    return per_step


def test_the_alarm_is_raised_at_the_first_step_whose_ratio_interval_leaves_the_band() -> None:
    ratios = [1.0 + 0.5 * s / 19 for s in range(20)]
    scores = [0.2 + 0.6 * s / 19 for s in range(20)]
    watch = run_watch(_steps(ratios, scores), tau=0.2)
    first_out = next(b for b in watch.buckets if b.ratio_interval and b.ratio_interval[0] > 1.2)
    assert watch.alarm.flagged and watch.alarm.from_step == first_out.first_step
    assert watch.buckets[first_out.first_step - 1].ratio_interval[0] <= 1.2  # type: ignore[index]
    assert watch.alarm.band == pytest.approx((0.8, 1.2))
    assert watch.alarm.how2score_first == 0.2 and watch.alarm.slope_per_step > 0  # type: ignore[operator]
    assert f"At step {first_out.first_step} the mean gen/ref length ratio" in watch.alarm.why
    assert "wholly above the band [0.80, 1.20]" in watch.alarm.why


def test_a_control_run_near_one_raises_none() -> None:
    scores = [0.2 + 0.6 * s / 19 for s in range(20)]
    watch = run_watch(_steps([1.0 + 0.01 * (s % 3) for s in range(20)], scores), tau=0.2)
    assert not watch.alarm.flagged and watch.alarm.from_step is None
    assert "No step's length-ratio interval lies wholly outside [0.80, 1.20]" in watch.alarm.why


def test_longer_answers_without_a_rising_how2score_raise_none() -> None:
    ratios = [1.0 + 0.5 * s / 19 for s in range(20)]
    watch = run_watch(_steps(ratios, [0.8 - 0.02 * s for s in range(20)]), tau=0.2)
    assert not watch.alarm.flagged and "How2Score had not risen" in watch.alarm.why


def test_shorter_answers_below_the_band_with_a_rising_score_raise_it() -> None:
    watch = run_watch(_steps([1.0, 0.9, 0.6, 0.5], [0.1, 0.2, 0.3, 0.4]), tau=0.2)
    assert watch.alarm.flagged and watch.alarm.from_step == 2 and "wholly below" in watch.alarm.why


def test_tau_sets_the_band() -> None:
    per_step = _steps([1.0, 1.3, 1.35], [0.1, 0.5, 0.6])
    assert run_watch(per_step, tau=0.2).alarm.from_step == 1
    assert not run_watch(per_step, tau=0.5).alarm.flagged


def test_the_first_bucket_alone_cannot_raise_it() -> None:
    alarm = length_gaming_alarm(buckets_of(_steps([1.5], [0.9]))[1], tau=0.2)
    assert not alarm.flagged
