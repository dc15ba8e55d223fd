"""The run page's charts over steps (server-side SVG, as judging/charts.py draws the others; no script): a
figure per bucket as a line, its 95 % interval as a shaded band, optionally a target band shaded across the
plot ([1 - τ, 1 + τ] on the length ratio) and a dashed line at the step the alarm was raised.
Drawn by templates/judging/training/_series_chart.html."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .watch import Bucket, Interval, RunWatch

WIDTH, HEIGHT = 480, 230
LEFT, RIGHT, TOP, BOTTOM = 50, 14, 12, 44  # the plot's margins: y labels left, x labels and "step" below


@dataclass(frozen=True)
class Tick:
    at: float  # the pixel position along its axis
    label: str


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class SeriesChart:
    slug: str  # for the ids of its title and description
    title: str
    description: str
    width: int
    height: int
    left: int
    top: int
    right: float  # the plot's right and bottom edges in pixels
    bottom: float
    line: str  # polyline points "x,y x,y ..."
    bands: list[str]  # polygon points, one per run of consecutive buckets with an interval
    marks: list[Mark]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    target: tuple[float, float] | None  # the shaded target band: its top y and height
    target_label: str
    alarm_x: float | None

    @property
    def plot_width(self) -> float:
        return self.right - self.left


@dataclass(frozen=True)
class Series:
    """What a chart draws of each bucket: its value, its interval and how a value is written."""

    value: Callable[[Bucket], float | None]
    interval: Callable[[Bucket], Interval | None]
    written: Callable[[float], str]


def nice_step(span: float, count: int = 5) -> float:
    """A round tick spacing (1, 2, 2.5 or 5 times a power of ten) giving about `count` ticks over `span`."""
    raw = span / count if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def ticks_between(low: float, high: float, count: int = 5) -> list[float]:
    step = nice_step(high - low, count)
    first = math.ceil(low / step - 1e-9) * step
    return [first + k * step for k in range(int((high - first) / step + 1e-9) + 1)]


def _scale(low: float, high: float, start: float, end: float) -> Callable[[float], float]:
    span = (high - low) or 1.0
    return lambda value: round(start + (value - low) / span * (end - start), 1)


def _bands(points: Sequence[tuple[float, Interval | None]], y: Callable[[float], float]) -> list[str]:
    """Polygons over runs of consecutive points with an interval: along the highs, back along the lows."""
    runs: list[list[tuple[float, Interval]]] = [[]]
    for x, interval in points:
        if interval is None:
            runs.append([])
        else:
            runs[-1].append((x, interval))
    return [
        " ".join([f"{x},{y(i[1])}" for x, i in run] + [f"{x},{y(i[0])}" for x, i in reversed(run)])
        for run in runs
        if run
    ]


def series_chart(
    watch: RunWatch,
    series: Series,
    *,
    slug: str,
    title: str,
    y_range: tuple[float, float],
    y_label: Callable[[float], str],
    target: Interval | None = None,
    target_label: str = "",
) -> SeriesChart:
    buckets = [b for b in watch.buckets if series.value(b) is not None]
    first = watch.buckets[0].first_step if watch.buckets else 0
    last = max(watch.buckets[-1].first_step if watch.buckets else 1, first + 1)
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    x = _scale(first, last, LEFT, right)
    y = _scale(y_range[0], y_range[1], bottom, TOP)
    marks = [_mark(b, series, x, y) for b in buckets]
    alarm = watch.alarm.from_step
    return SeriesChart(
        slug=slug,
        title=title,
        description=_description(watch, title, target_label),
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        top=TOP,
        right=right,
        bottom=bottom,
        line=" ".join(f"{m.x},{m.y}" for m in marks),
        bands=_bands([(x(b.first_step), _clipped(series.interval(b), y_range)) for b in buckets], y),
        marks=marks,
        y_ticks=[Tick(y(v), y_label(v)) for v in ticks_between(*y_range)],
        x_ticks=[Tick(x(v), f"{v:g}") for v in ticks_between(first, last) if v == int(v)],
        target=None if target is None else (y(target[1]), round(y(target[0]) - y(target[1]), 1)),
        target_label=target_label,
        alarm_x=None if alarm is None else x(alarm),
    )


def _clipped(interval: Interval | None, y_range: tuple[float, float]) -> Interval | None:
    if interval is None:
        return None
    return max(interval[0], y_range[0]), min(interval[1], y_range[1])


def _mark(bucket: Bucket, series: Series, x: Callable[[float], float], y: Callable[[float], float]) -> Mark:
    value = series.value(bucket)
    assert value is not None
    interval = series.interval(bucket)
    ci = f" (95 % CI {series.written(interval[0])}\u2013{series.written(interval[1])})" if interval else ""
    return Mark(x(bucket.first_step), y(value), f"step {bucket.label}: {series.written(value)}{ci}")


def _description(watch: RunWatch, title: str, target_label: str) -> str:
    per = "step" if watch.bucket_size == 1 else f"bucket of {watch.bucket_size} steps"
    target = f"; shaded across: {target_label}" if target_label else ""
    alarm = (
        f"; dashed line: the length-gaming alarm, step {watch.alarm.bucket}" if watch.alarm.flagged else ""
    )
    return f"{title} per {per} (line), its 95 % interval (band){target}{alarm}."


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def _percent_written(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def run_charts(watch: RunWatch) -> list[SeriesChart]:
    """How2Score, the length ratio (the band [1 - τ, 1 + τ] shaded) and the format pass rate, over steps."""
    how2score = Series(lambda b: b.how2score, lambda b: b.how2score_interval, _percent_written)
    ratio = Series(lambda b: b.ratio_mean, lambda b: b.ratio_interval, _ratio)
    format_rate = Series(lambda b: b.format_rate, lambda b: b.format_interval, _percent_written)
    band = watch.band
    return [
        series_chart(
            watch, how2score, slug="how2score", title="How2Score", y_range=(0.0, 1.0), y_label=_percent
        ),
        series_chart(
            watch,
            ratio,
            slug="ratio",
            title="Length ratio gen/ref",
            y_range=ratio_range(watch.buckets, band),
            y_label=lambda v: f"{v:g}",
            target=band,
            target_label=f"[1 \u2212 τ, 1 + τ] = [{band[0]:g}, {band[1]:g}]",
        ),
        series_chart(
            watch,
            format_rate,
            slug="format",
            title="Format pass rate",
            y_range=(0.0, 1.0),
            y_label=_percent,
        ),
    ]


def ratio_range(buckets: Sequence[Bucket], band: Interval) -> tuple[float, float]:
    """The length-ratio axis: the band and every interval (or mean) in view, widened to round ticks."""
    values = [*band]
    for bucket in buckets:
        values.extend(bucket.ratio_interval or ([bucket.ratio_mean] if bucket.ratio_mean is not None else []))
    low, high = max(0.0, min(values)), max(values)
    step = nice_step(high - low)
    return math.floor(low / step) * step, math.ceil(high / step) * step
