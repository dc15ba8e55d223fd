"""A training run watched (issue #32 item 3): per step, or per bucket of steps, the figures of its reward
calls with their 95 % intervals, and the length-gaming alarm (paper Table 12). Pure arithmetic: no Django
here (judging/training/selectors.py adds the sums up in the database and hands them over).

The figures of a bucket (docs/reference/statistics.md, "Training runs: the figures and the length-gaming
alarm", defines each):
- How2Score: the share of its calls the judge scored 1, over the calls it scored (0 or 1; null left out),
  with its Wilson interval; and the same among the calls whose step format passed (the §7.1 confound).
- the format pass rate: the share of calls whose format is 1, over those with a format, Wilson interval;
- the mean of the length reward and of the total, over the calls that have one;
- the mean gen/ref length ratio with its 95 % Student t interval (n - 1 degrees of freedom; none for n < 2);
- the share answered from the store, over all calls; the number of judge errors (calls with an error).

The alarm: the run is flagged from the first bucket whose length-ratio interval lies wholly outside
[1 - τ, 1 + τ] while How2Score has risen: the least-squares slope of the buckets' How2Score against their
first step, over the buckets so far (this one included) that have a How2Score, is above 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from h2e_site.stats import wilson_interval

MAX_POINTS = 100  # a chart has at most this many points: more distinct steps are put in buckets
CONFIDENCE = 0.95

Interval = tuple[float, float]


@dataclass(frozen=True)
class CallFigures:
    """What the statistics read of one reward call (a RewardCall row)."""

    how2score: int | None
    format: int | None
    length: float | None
    length_ratio: float | None
    total: float | None
    from_store: bool
    error: str = ""


@dataclass(frozen=True)
class StepSums:
    """Counts and sums over the calls of a step (or of several: sums add up), from which every figure of a
    bucket follows. The database computes them per step (selectors.run_step_sums); `of_calls` in Python."""

    n_calls: int = 0
    n_scored: int = 0  # How2Score not null
    n_passed: int = 0  # How2Score 1
    n_format: int = 0  # format not null
    n_format_ok: int = 0  # format 1
    n_scored_format_ok: int = 0  # How2Score not null and format 1
    n_passed_format_ok: int = 0  # How2Score 1 and format 1
    n_length: int = 0
    length_sum: float = 0.0
    n_total: int = 0
    total_sum: float = 0.0
    n_ratio: int = 0
    ratio_sum: float = 0.0
    ratio_squares: float = 0.0
    n_from_store: int = 0
    n_errors: int = 0

    def __add__(self, other: StepSums) -> StepSums:
        return StepSums(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @classmethod
    def of_calls(cls, calls: Iterable[CallFigures]) -> StepSums:
        return sum((cls._of_call(call) for call in calls), cls())

    @classmethod
    def _of_call(cls, call: CallFigures) -> StepSums:
        scored, ok = call.how2score is not None, call.format == 1
        return cls(
            n_calls=1,
            n_scored=int(scored),
            n_passed=int(call.how2score == 1),
            n_format=int(call.format is not None),
            n_format_ok=int(ok),
            n_scored_format_ok=int(scored and ok),
            n_passed_format_ok=int(call.how2score == 1 and ok),
            n_length=int(call.length is not None),
            length_sum=call.length or 0.0,
            n_total=int(call.total is not None),
            total_sum=call.total or 0.0,
            n_ratio=int(call.length_ratio is not None),
            ratio_sum=call.length_ratio or 0.0,
            ratio_squares=(call.length_ratio or 0.0) ** 2,
            n_from_store=int(call.from_store),
            n_errors=int(bool(call.error)),
        )


def mean_interval(n: int, total: float, squares: float) -> Interval | None:
    """The 95 % Student t interval of a mean from n values' sum and sum of squares (None for n < 2): mean ±
    t(0.975, n - 1) · s / √n, s the sample standard deviation."""
    if n < 2:
        return None
    mean = total / n
    variance = max(0.0, (squares - n * mean * mean) / (n - 1))  # rounding may leave a tiny negative
    if variance == 0:
        return mean, mean
    from scipy import stats  # not at start-up (tests/test_startup.py): ~0.4 s of import

    low, high = stats.t.interval(CONFIDENCE, n - 1, loc=mean, scale=math.sqrt(variance / n))
    return float(low), float(high)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


@dataclass(frozen=True)
class Bucket:
    """The figures of the calls of steps first_step..last_step (one step when the two are equal)."""

    first_step: int
    last_step: int
    n_steps: int  # steps of the bucket that have calls
    n_calls: int
    n_scored: int
    how2score: float | None
    how2score_interval: Interval | None
    n_format: int
    format_rate: float | None
    format_interval: Interval | None
    n_scored_format_ok: int
    how2score_format_ok: float | None
    how2score_format_ok_interval: Interval | None
    length_mean: float | None
    total_mean: float | None
    n_ratio: int
    ratio_mean: float | None
    ratio_interval: Interval | None
    store_share: float | None
    n_errors: int

    @property
    def label(self) -> str:
        return (
            str(self.first_step)
            if self.first_step == self.last_step
            else f"{self.first_step}\u2013{self.last_step}"
        )

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


def bucket_of(first_step: int, last_step: int, n_steps: int, sums: StepSums) -> Bucket:
    return Bucket(
        first_step=first_step,
        last_step=last_step,
        n_steps=n_steps,
        n_calls=sums.n_calls,
        n_scored=sums.n_scored,
        how2score=_share(sums.n_passed, sums.n_scored),
        how2score_interval=wilson_interval(sums.n_passed, sums.n_scored),
        n_format=sums.n_format,
        format_rate=_share(sums.n_format_ok, sums.n_format),
        format_interval=wilson_interval(sums.n_format_ok, sums.n_format),
        n_scored_format_ok=sums.n_scored_format_ok,
        how2score_format_ok=_share(sums.n_passed_format_ok, sums.n_scored_format_ok),
        how2score_format_ok_interval=wilson_interval(sums.n_passed_format_ok, sums.n_scored_format_ok),
        length_mean=_mean(sums.length_sum, sums.n_length),
        total_mean=_mean(sums.total_sum, sums.n_total),
        n_ratio=sums.n_ratio,
        ratio_mean=_mean(sums.ratio_sum, sums.n_ratio),
        ratio_interval=mean_interval(sums.n_ratio, sums.ratio_sum, sums.ratio_squares),
        store_share=_share(sums.n_from_store, sums.n_calls),
        n_errors=sums.n_errors,
    )


def bucket_size(steps: Iterable[int]) -> int:
    """1 (a row per step) when there are at most MAX_POINTS distinct steps; else the smallest whole number of
    steps a bucket spans so that buckets 0..size-1, size..2·size-1, ... up to the last step number at most
    MAX_POINTS: ⌈(last step + 1) / MAX_POINTS⌉."""
    seen = set(steps)
    if len(seen) <= MAX_POINTS:
        return 1
    return math.ceil((max(seen) + 1) / MAX_POINTS)


def buckets_of(per_step: dict[int, StepSums]) -> tuple[int, list[Bucket]]:
    """The bucket size and the buckets that have calls, in step order."""
    size = bucket_size(per_step)
    grouped: dict[int, list[StepSums]] = {}
    for step in sorted(per_step):
        grouped.setdefault(step // size, []).append(per_step[step])
    buckets = [
        bucket_of(index * size, index * size + size - 1, len(sums), sum(sums, StepSums()))
        for index, sums in grouped.items()
    ]
    return size, buckets


def band_of(tau: float) -> Interval:
    """§E.4's band of length ratios that earn the whole length reward: [1 - τ, 1 + τ]."""
    return 1.0 - tau, 1.0 + tau


def outside_band(interval: Interval | None, band: Interval) -> bool:
    """Whether the interval lies wholly outside the band (above it or below it)."""
    return interval is not None and (interval[0] > band[1] or interval[1] < band[0])


def trend(points: Sequence[tuple[float, float]]) -> float | None:
    """The ordinary least-squares slope of y on x (None with fewer than two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return None
    from scipy import stats

    return float(stats.linregress([x for x, _ in points], [y for _, y in points]).slope)


@dataclass(frozen=True)
class Alarm:
    """The length-gaming alarm: whether the run is flagged, from which step, the figures that raised it."""

    flagged: bool
    from_step: int | None = None
    bucket: str = ""  # the bucket's label ("12", or "100-109" with an en dash)
    ratio_mean: float | None = None
    ratio_interval: Interval | None = None
    band: Interval | None = None
    how2score_first: float | None = None  # the first bucket with a How2Score
    first_step: int | None = None
    how2score: float | None = None  # the flagged bucket's
    slope_per_step: float | None = None  # How2Score's least-squares slope over the buckets so far
    why: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def length_gaming_alarm(buckets: Sequence[Bucket], tau: float) -> Alarm:
    """The first bucket whose length-ratio interval lies wholly outside [1 - τ, 1 + τ] while How2Score's
    least-squares slope over the buckets so far is above 0 (module docstring); not flagged when none does."""
    band = band_of(tau)
    scored: list[Bucket] = []
    for bucket in buckets:
        if bucket.how2score is not None:
            scored.append(bucket)
        if not outside_band(bucket.ratio_interval, band) or bucket.how2score is None:
            continue
        slope = trend([(b.first_step, b.how2score) for b in scored if b.how2score is not None])
        if slope is not None and slope > 0:
            return _raised(bucket, scored[0], slope, band)
    return Alarm(flagged=False, band=band, why=_quiet_reason(buckets, band))


def _raised(bucket: Bucket, first: Bucket, slope: float, band: Interval) -> Alarm:
    assert bucket.ratio_interval is not None and bucket.ratio_mean is not None
    assert bucket.how2score is not None and first.how2score is not None
    low, high = bucket.ratio_interval
    side = "above" if low > band[1] else "below"
    why = (
        f"At step {bucket.label} the mean gen/ref length ratio is {bucket.ratio_mean:.2f} (95 % CI "
        f"{low:.2f}\u2013{high:.2f}), wholly {side} the band [{band[0]:.2f}, {band[1]:.2f}], while "
        f"How2Score has risen: {100 * first.how2score:.1f}% at step {first.label}, "
        f"{100 * bucket.how2score:.1f}% now, a least-squares trend of {100 * slope:+.2f} points per step."
    )
    return Alarm(
        flagged=True,
        from_step=bucket.first_step,
        bucket=bucket.label,
        ratio_mean=bucket.ratio_mean,
        ratio_interval=bucket.ratio_interval,
        band=band,
        how2score_first=first.how2score,
        first_step=first.first_step,
        how2score=bucket.how2score,
        slope_per_step=slope,
        why=why,
    )


def _quiet_reason(buckets: Sequence[Bucket], band: Interval) -> str:
    outside = [b for b in buckets if outside_band(b.ratio_interval, band)]
    if not buckets:
        return "No reward call with a step yet."
    if not outside:
        return f"No step's length-ratio interval lies wholly outside [{band[0]:.2f}, {band[1]:.2f}]."
    return (
        f"{len(outside)} step(s) have a length-ratio interval outside [{band[0]:.2f}, {band[1]:.2f}] "
        f"(the first: {outside[0].label}), but How2Score had not risen by then."
    )


@dataclass(frozen=True)
class RunWatch:
    """Everything the run's page and API show of its calls."""

    tau: float
    bucket_size: int
    buckets: list[Bucket]
    alarm: Alarm

    @property
    def band(self) -> Interval:
        return band_of(self.tau)


def run_watch(per_step: dict[int, StepSums], tau: float) -> RunWatch:
    size, buckets = buckets_of(per_step)
    return RunWatch(tau=tau, bucket_size=size, buckets=buckets, alarm=length_gaming_alarm(buckets, tau))
