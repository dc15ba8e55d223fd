"""Server-side SVG bar charts of the agreement pages: geometry computed here, drawn by
templates/annotation/_bars.svg.html (no chart library, no CDN)."""

from __future__ import annotations

import math
from dataclasses import dataclass

LABEL_WIDTH = 260
BAR_WIDTH = 420
ROW_HEIGHT = 30
TOP = 28


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    low: float | None = None  # confidence interval, drawn as a whisker
    high: float | None = None
    note: str = ""
    kind: str = "judge"  # css class: judge, human, alpha, demo


@dataclass(frozen=True)
class DrawnBar:
    bar: Bar
    y: float
    width: float  # of the bar, from the axis origin
    x0: float  # where the bar starts (the origin, or the value when negative)
    whisker: tuple[float, float] | None
    text_x: float


@dataclass(frozen=True)
class BarChart:
    title: str
    bars: list[DrawnBar]
    ticks: list[tuple[float, str]]
    band: tuple[float, float] | None  # x and width of a shaded reference range (e.g. single humans' range)
    band_label: str
    width: int
    height: int
    origin_x: float
    axis_y: float


def bar_chart(
    title: str,
    bars: list[Bar],
    *,
    lowest: float = 0.0,
    band: tuple[float, float] | None = None,
    band_label: str = "",
    percent: bool = True,
) -> BarChart:
    """Horizontal bars on a [lowest, 1] axis (below 0 for negative alphas), CI whiskers, an optional band."""
    low_end = min([lowest, *(b.low for b in bars if b.low is not None), *(b.value or 0 for b in bars)])
    low_end = math.floor(min(0.0, max(-1.0, low_end)) * 4) / 4  # ticks every 0.25 from a round start

    def x(value: float) -> float:
        return LABEL_WIDTH + (value - low_end) / (1 - low_end) * BAR_WIDTH

    origin = x(0.0)
    drawn = []
    for i, bar in enumerate(bars):
        y = TOP + i * ROW_HEIGHT
        value = bar.value if bar.value is not None else 0.0
        start, end = sorted((origin, x(value)))
        whisker = (x(bar.low), x(bar.high)) if bar.low is not None and bar.high is not None else None
        right = max(end, whisker[1] if whisker else end)
        drawn.append(DrawnBar(bar, y, end - start, start, whisker, right + 6))
    steps = [low_end + k / 4 for k in range(round((1 - low_end) * 4) + 1)]
    ticks = [(x(v), f"{v * 100:.0f}%" if percent else f"{v:.2f}") for v in steps]
    band_x = (x(band[0]), max(x(band[1]) - x(band[0]), 2.0)) if band else None
    height = TOP + len(bars) * ROW_HEIGHT + 24
    return BarChart(
        title, drawn, ticks, band_x, band_label, LABEL_WIDTH + BAR_WIDTH + 110, height, origin, height - 22
    )
