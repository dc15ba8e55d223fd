"""Server-side SVG charts: geometry and colours computed here, drawn by templates (so all text is escaped).

- heatmap: How2Score per generator x topic for one judge (rows best generator first, empty cells kept);
- bar chart: a count per label (failures per topic), longest bar = largest count;
- forest plot: each leaderboard line's How2Score and its 95 % Wilson interval on one shared axis, one small
  SVG per table row (x in percent of the cell's width, so the plot stretches without distorting its marks).
No JavaScript and no external assets: the SVG is inline in the page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from urllib.parse import urlencode

from .selectors import How2Score, TopicLeaderboardRow

NO_TOPIC = "(no topic)"

# --- colour scale ---------------------------------------------------------------------------------------

# A diverging red-white-blue scale (ColorBrewer RdBu, colour-blind safe): low How2Score red, high blue.
_STOPS: list[tuple[float, tuple[int, int, int]]] = [
    (0.0, (178, 24, 43)),
    (0.25, (239, 138, 98)),
    (0.5, (247, 247, 247)),
    (0.75, (103, 169, 207)),
    (1.0, (33, 102, 172)),
]


def score_colour(fraction: float) -> str:
    """The fill for a score in [0, 1] (clamped), as #rrggbb."""
    x = min(1.0, max(0.0, fraction))
    for (x0, c0), (x1, c1) in pairwise(_STOPS):
        if x <= x1:
            t = (x - x0) / (x1 - x0) if x1 > x0 else 0.0
            r, g, b = (round(a + (b_ - a) * t) for a, b_ in zip(c0, c1, strict=True))
            return f"#{r:02x}{g:02x}{b:02x}"
    return "#{:02x}{:02x}{:02x}".format(*_STOPS[-1][1])


def text_colour(fill: str) -> str:
    """Black or white, whichever reads better on the fill (relative luminance)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#111111" if luminance > 0.5 else "#ffffff"


# --- heatmap ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeatmapCell:
    generator_id: str
    generator_model: str
    topic: str
    score: How2Score | None  # None: the judge judged nothing of this generator in this topic

    def percent(self, strict: bool) -> float | None:
        if self.score is None:
            return None
        if strict:
            return self.score.strict_how2score_percent if self.score.total else None
        return self.score.how2score_percent if self.score.n_examples else None

    def interval(self, strict: bool) -> tuple[float, float] | None:
        """The 95 % Wilson score interval of the cell's score, in percent."""
        if self.score is None:
            return None
        return self.score.strict_interval_percent if strict else self.score.interval_percent

    def n(self, strict: bool) -> int:
        """The examples behind the cell: scored ones (h2e), or all judged ones (strict)."""
        if self.score is None:
            return 0
        return self.score.total if strict else self.score.n_examples


@dataclass(frozen=True)
class HeatmapRow:
    generator_id: str
    generator_model: str
    overall: How2Score
    cells: list[HeatmapCell]


@dataclass(frozen=True)
class Heatmap:
    judge_id: str
    strict: bool
    topics: list[str]
    rows: list[HeatmapRow] = field(default_factory=list)

    def csv_rows(self) -> Iterable[dict[str, object]]:
        """One row per generator x topic (empty cells included, with n 0 and no score)."""
        for row in self.rows:
            for cell in row.cells:
                percent = cell.percent(self.strict)
                yield {
                    "judge_id": self.judge_id,
                    "generator_model": row.generator_model,
                    "generator_id": row.generator_id,
                    "topic": cell.topic,
                    "score": "strict" if self.strict else "h2e",
                    "how2score_percent": "" if percent is None else percent,
                    **_ci_cells(cell.interval(self.strict)),
                    "n": cell.n(self.strict),
                    "n_with_failures": cell.score.n_with_failures if cell.score else 0,
                    "n_parse_failed": cell.score.n_parse_failed if cell.score else 0,
                }


def _ci_cells(interval: tuple[float, float] | None) -> dict[str, object]:
    return (
        {"ci_low": "", "ci_high": ""} if interval is None else {"ci_low": interval[0], "ci_high": interval[1]}
    )


def _total(scores: Iterable[How2Score]) -> How2Score:
    scores = list(scores)
    return How2Score(
        total=sum(s.total for s in scores),
        n_parse_failed=sum(s.n_parse_failed for s in scores),
        n_with_failures=sum(s.n_with_failures for s in scores),
        sum_failures=sum(s.sum_failures for s in scores),
    )


def heatmap(rows: Sequence[TopicLeaderboardRow], *, judge_id: str, strict: bool = False) -> Heatmap:
    """The generator x topic grid of one judge's by-topic How2Scores (selectors.how2score_by_topic)."""
    rows = [r for r in rows if r.judge_id == judge_id]
    topics = sorted({r.topic or NO_TOPIC for r in rows}, key=lambda t: (t == NO_TOPIC, t))
    by_generator: dict[str, dict[str, TopicLeaderboardRow]] = {}
    for r in rows:
        by_generator.setdefault(r.generator_id, {})[r.topic or NO_TOPIC] = r
    grid = []
    for generator_id, cells in by_generator.items():
        model = next(iter(cells.values())).generator_model
        grid.append(
            HeatmapRow(
                generator_id,
                model,
                _total(c.score for c in cells.values()),
                [HeatmapCell(generator_id, model, t, cells[t].score if t in cells else None) for t in topics],
            )
        )

    def overall(row: HeatmapRow) -> float:
        return row.overall.strict_how2score if strict else row.overall.how2score

    grid.sort(key=lambda r: (-overall(r), r.generator_model, r.generator_id))
    return Heatmap(judge_id=judge_id, strict=strict, topics=topics, rows=grid)


# --- SVG geometry -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SvgCell:
    x: int
    y: int
    fill: str
    text_fill: str
    label: str  # the number drawn in the cell ("" for an empty cell)
    title: str  # the tooltip: generator x topic, score, n
    empty: bool
    failures_query: str = ""  # the failure browser's filters for this generator x topic x judge ("": none)


@dataclass(frozen=True)
class SvgLabel:
    x: int
    y: int
    text: str
    title: str


@dataclass(frozen=True)
class HeatmapSvg:
    width: int
    height: int
    min_width: int  # the narrowest it is drawn (CSS): narrower containers scroll rather than shrink it more
    label_w: int
    cell_w: int
    cell_h: int
    cells: list[SvgCell]
    row_labels: list[SvgLabel]
    column_labels: list[SvgLabel]
    legend: list[SvgCell]
    legend_y: int
    title: str
    description: str


_LABEL_W, _HEADER_H, _CELL_W, _CELL_H, _LEGEND_H = 250, 150, 58, 30, 82
_LEGEND_SWATCH = 24
_CHAR_W = 7.0  # about the width of a character of the 12.5 px labels
_MIN_SCALE = 0.7  # a phone may shrink the chart this far (text of 12 px to about 8.5 px), then it scrolls


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header_height(topics: Sequence[str]) -> int:
    """Room for the column labels, drawn at -40 degrees (about 4.4 px of height per character)."""
    longest = max((len(_short(t, 24)) for t in topics), default=0)
    return min(_HEADER_H, 24 + round(4.4 * longest))


def _failures_query(judge_id: str, generator_id: str, topic: str) -> str:
    """The failure browser's query string for one heatmap cell: the judge's critical failures of that
    generator in that topic ("" for the no-topic column, which the browser cannot filter on)."""
    if topic == NO_TOPIC:
        return ""
    return urlencode({"topic": topic, "generator": generator_id, "judge": judge_id, "source": "judge"})


def _label_width(grid: Heatmap) -> int:
    """Room for the longest generator label (34 characters at most), and for the legend's caption."""
    longest = max((len(_short(row.generator_model, 34)) for row in grid.rows), default=0)
    return min(_LABEL_W, max(100, 16 + round(_CHAR_W * longest)))


def _heatmap_width(grid: Heatmap, label_w: int) -> int:
    """Cells, the overhang of the last slanted column label (drawn at -40 degrees from the column's middle),
    and the legend, whichever reaches furthest."""
    last = len(_short(grid.topics[-1], 24)) if grid.topics else 0
    overhang = max(0, round(0.766 * 6.6 * last) - _CELL_W // 2)
    cells = label_w + len(grid.topics) * _CELL_W + overhang + 8
    legend = label_w + 11 * _LEGEND_SWATCH + 12
    return max(cells, legend)


def heatmap_svg(grid: Heatmap, *, judge_label: str) -> HeatmapSvg:
    """Positions, colours and tooltips of the heatmap drawn by templates/judging/_heatmap_svg.html."""
    kind = "strict How2Score" if grid.strict else "How2Score"
    header = _header_height(grid.topics)
    label_w = _label_width(grid)
    cells, row_labels = [], []
    for i, row in enumerate(grid.rows):
        y = header + i * _CELL_H
        row_labels.append(
            SvgLabel(
                label_w - 8,
                y + _CELL_H // 2 + 5,
                _short(row.generator_model, 34),
                f"{row.generator_model} ({row.generator_id})",
            )
        )
        for j, cell in enumerate(row.cells):
            percent, n = cell.percent(grid.strict), cell.n(grid.strict)
            x = label_w + j * _CELL_W
            where = f"{row.generator_model} \u00d7 {cell.topic}"  # multiplication sign
            if percent is None:
                cells.append(
                    SvgCell(x, y, "#eef0f4", "#5d6677", "", f"{where}: no scored examples (n = {n})", True)
                )
                continue
            fill = score_colour(percent / 100)
            low, high = cell.interval(grid.strict) or (percent, percent)
            cells.append(
                SvgCell(
                    x,
                    y,
                    fill,
                    text_colour(fill),
                    f"{percent:.0f}",
                    f"{where}: {kind} {percent:.1f}% (95 % CI {low:.1f}-{high:.1f}, n = {n})",
                    False,
                    _failures_query(grid.judge_id, row.generator_id, cell.topic),
                )
            )
    column_labels = [
        SvgLabel(label_w + j * _CELL_W + _CELL_W // 2, header - 8, _short(topic, 24), topic)
        for j, topic in enumerate(grid.topics)
    ]
    legend_y = header + len(grid.rows) * _CELL_H + 24
    legend = [
        SvgCell(
            label_w + k * _LEGEND_SWATCH,
            legend_y,
            score_colour(k / 10),
            text_colour(score_colour(k / 10)),
            f"{k * 10}",
            f"{k * 10}%",
            False,
        )
        for k in range(11)
    ]
    width = _heatmap_width(grid, label_w)
    height = legend_y + _LEGEND_H
    return HeatmapSvg(
        width=width,
        height=height,
        min_width=round(width * _MIN_SCALE),
        label_w=label_w,
        cell_w=_CELL_W,
        cell_h=_CELL_H,
        cells=cells,
        row_labels=row_labels,
        column_labels=column_labels,
        legend=legend,
        legend_y=legend_y,
        title=f"{kind} by topic, judged by {judge_label}",
        description=(
            f"{len(grid.rows)} generators (rows, best overall first) by {len(grid.topics)} topics (columns); "
            "each cell is the share of examples with no critical failure, grey where there is none."
        ),
    )


# --- bar chart ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SvgBar:
    y: int
    width: int
    label: str
    title: str
    value: int
    href: str
    value_x: int

    @property
    def percent(self) -> float:
        """Its length as a share of the longest bar's, in % (a bar drawn in HTML, as wide as its card)."""
        return round(100 * self.width / _BAR_W, 1)


@dataclass(frozen=True)
class BarChartSvg:
    width: int
    height: int
    label_w: int
    bar_h: int
    bars: list[SvgBar]
    title: str
    description: str


_BAR_LABEL_W, _BAR_W, _BAR_H, _BAR_GAP = 210, 420, 20, 6


def bar_chart_svg(items: Sequence[tuple[str, int, str]], *, title: str, unit: str) -> BarChartSvg:
    """Horizontal bars for (label, count, link) items, in the given order."""
    top = max((count for _, count, _ in items), default=0)
    bars = []
    for i, (label, count, href) in enumerate(items):
        width = round(_BAR_W * count / top) if top else 0
        bars.append(
            SvgBar(
                y=i * (_BAR_H + _BAR_GAP),
                width=max(width, 1 if count else 0),
                label=_short(label, 30),
                title=f"{label}: {count:,} {unit}",
                value=count,
                href=href,
                value_x=_BAR_LABEL_W + max(width, 1) + 6,
            )
        )
    return BarChartSvg(
        width=_BAR_LABEL_W + _BAR_W + 90,
        height=max(1, len(items)) * (_BAR_H + _BAR_GAP),
        label_w=_BAR_LABEL_W,
        bar_h=_BAR_H,
        bars=bars,
        title=title,
        description=f"{len(items)} bars, one per topic, length proportional to the number of {unit}.",
    )


# --- forest plot --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForestTick:
    x: float  # percent of the plot's width
    label: str
    anchor: str  # SVG text-anchor: the end ticks' labels stay inside the plot
    minor: bool  # a label a narrow plot leaves out (all but the ends and the middle)


@dataclass(frozen=True)
class ForestMark:
    """One line's point and interval, as x positions in percent of the plot's width."""

    point: float
    low: float
    high: float
    title: str  # the tooltip and accessible name


@dataclass(frozen=True)
class ForestAxis:
    """The axis every row of one leaderboard shares: How2Score percent from `low` to `high`."""

    low: float
    high: float
    ticks: list[ForestTick]

    def x(self, percent: float) -> float:
        """Where a How2Score (in percent) falls, in percent of the plot's width (clamped to the axis)."""
        return round(100.0 * (min(self.high, max(self.low, percent)) - self.low) / (self.high - self.low), 2)

    def mark(self, score: How2Score) -> ForestMark | None:
        """The point and 95 % Wilson interval of a score, None when it has no scored example."""
        interval = score.interval_percent
        if interval is None:
            return None
        low, high = interval
        title = (
            f"How2Score {score.how2score_percent:.1f}% (95 % Wilson interval {low:.1f}-{high:.1f}, "
            f"n = {score.n_examples:,})"
        )
        return self.mark_interval(score.how2score_percent, low, high, title)

    def mark_interval(self, point: float, low: float, high: float, title: str) -> ForestMark:
        """Any point and interval in percent (clamped to the axis), with its tooltip."""
        return ForestMark(point=self.x(point), low=self.x(low), high=self.x(high), title=title)


def _axis_range(low: float, high: float) -> tuple[int, int, int]:
    """(start, end, step): the finest step of 5, 10, 20 or 25 points whose whole ticks around [low, high]
    make at most six intervals, within 0-100."""
    for step in (5, 10, 20, 25):
        start = max(0, math.floor(low / step) * step)
        end = min(100, math.ceil(high / step) * step)
        if (end - start) / step <= 6:
            break
    return start, end, step


def forest_axis(scores: Iterable[How2Score]) -> ForestAxis:
    """The shared axis of a forest plot: from the lowest interval bound to the highest, widened to whole
    ticks and to at least 10 points, within 0-100 (the whole 0-100 when nothing has an interval)."""
    return forest_axis_of(i for i in (s.interval_percent for s in scores) if i is not None)


def forest_axis_of(percent_intervals: Iterable[tuple[float, float]]) -> ForestAxis:
    """forest_axis over any (low, high) intervals in percent (bounds outside 0-100 are clipped to it)."""
    intervals = [(max(0.0, low), min(100.0, high)) for low, high in percent_intervals]
    low = min((i[0] for i in intervals), default=0.0)
    high = max((i[1] for i in intervals), default=100.0)
    start, end, step = _axis_range(low, high)
    if end - start < 10:  # a narrow range: ten points around it, inside 0-100
        start, end, step = (90, 100, 5) if end > 90 else (start, start + 10, 5)
    values = list(range(start, end + 1, step))
    if values[-1] != end:
        values.append(end)
    ticks = [
        ForestTick(
            x=round(100.0 * (v - start) / (end - start), 2),
            label=f"{v}%",
            anchor="start" if v == start else "end" if v == end else "middle",
            minor=0 < i < len(values) - 1 and not (len(values) % 2 and i == len(values) // 2),
        )
        for i, v in enumerate(values)
    ]
    return ForestAxis(low=float(start), high=float(end), ticks=ticks)


HEATMAP_CSV_FIELDS = [
    "judge_id",
    "generator_model",
    "generator_id",
    "topic",
    "score",
    "how2score_percent",
    "ci_low",
    "ci_high",
    "n",
    "n_with_failures",
    "n_parse_failed",
]
