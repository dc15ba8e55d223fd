"""The calibrated leaderboard (staff, issue #20): /leaderboard/calibrated/ shows each generator's human-
calibrated How2Score (annotation/kinds/critical_failures/calibration/calibrated.py) beside its judge-only
score, for the judge the leaderboard
shows (?judge=ID, ?judge=all); /leaderboard/calibrated/<generator_id>/ breaks one generator down by topic.
Without ?judge=, the page shows the leaderboard's default judge, unless no generator it judged has a
calibration sample with human labels while another judge's has: then the default among those judges (the
page is about calibrated scores, and that judge has none to show).

Figures are shown in percent, their bounds clipped to 0-100 (the API gives the raw values)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration.cache import calibratable_judges, calibrated_board
from annotation.kinds.critical_failures.calibration.calibrated import CalibratedLine
from h2e_site.stats.calibration import CalibratedScore, StratifiedScore
from h2e_site.web import staff_required
from judging import charts, selectors
from judging.models import Generator, Judge
from judging.views import ALL_JUDGES, _leaderboard_judges


@dataclass(frozen=True)
class Percent:
    """A share shown in percent: its value and 95 % interval, the bounds clipped to 0-100."""

    value: float
    low: float | None
    high: float | None
    clipped: bool = False  # a bound fell outside 0-100 (the API keeps the raw value)


def percent(value: float | None, low: float | None = None, high: float | None = None) -> Percent | None:
    if value is None:
        return None
    if low is None or high is None:
        return Percent(100 * value, None, None)
    shown = (max(0.0, 100 * low), min(100.0, 100 * high))
    return Percent(100 * value, *shown, clipped=low < 0 or high > 1)


def score_percent(score: CalibratedScore | StratifiedScore | None) -> Percent | None:
    return percent(score.estimate, score.ci_low, score.ci_high) if score else None


@dataclass(frozen=True)
class Row:
    """One table line: the calibrated line, its rank under its judge and what the page draws."""

    line: CalibratedLine
    rank: int | None
    calibrated: Percent | None
    stratified: Percent | None
    judge: Percent | None
    human: Percent | None
    mark: charts.ForestMark | None
    judge_mark: charts.ForestMark | None


def _rows(lines: list[CalibratedLine]) -> tuple[list[Row], charts.ForestAxis]:
    shown = [(line, score_percent(line.overall), percent(line.judge_only, line.judge_low, line.judge_high))
             for line in lines]  # fmt: skip
    axis = charts.forest_axis_of(
        (p.low, p.high) for _, *ps in shown for p in ps if p and p.low is not None and p.high is not None
    )
    ranks: Counter[str] = Counter()
    rows = []
    for line, calibrated, judge in shown:
        rank = None
        if calibrated is not None:
            ranks[line.judge_id] += 1
            rank = ranks[line.judge_id]
        rows.append(
            Row(
                line,
                rank,
                calibrated,
                score_percent(line.stratified),
                judge,
                percent(line.overall.human_only, line.overall.human_low, line.overall.human_high),
                _mark(axis, "Calibrated How2Score", calibrated),
                _mark(axis, "Judge-only How2Score", judge),
            )
        )
    return rows, axis


def _mark(axis: charts.ForestAxis, name: str, shown: Percent | None) -> charts.ForestMark | None:
    if shown is None or shown.low is None or shown.high is None:
        return None
    title = f"{name} {shown.value:.1f}% (95 % interval {shown.low:.1f}-{shown.high:.1f})"
    return axis.mark_interval(shown.value, shown.low, shown.high, title)


def _judges(request: HttpRequest) -> tuple[list[Judge], list[str], str]:
    """Every judge, the judge ids shown ([]: all) and the ?judge= asked for, as the leaderboard."""
    judges = list(Judge.objects.by_model())
    judge_ids, asked = _leaderboard_judges(request, judges)
    return judges, judge_ids, asked


def _calibrated_default(judges: list[Judge], judge_ids: list[str], calibratable: frozenset[int]) -> list[str]:
    """The judge ids shown when none was asked for (module docstring): the leaderboard's default judge, or
    the default among the judges that judged a generator with human labels in its calibration sample."""
    if not calibratable or any(j.judge_id in judge_ids and j.pk in calibratable for j in judges):
        return judge_ids
    default = selectors.default_judge([j for j in judges if j.pk in calibratable])
    return [default.judge_id] if default else judge_ids


@staff_required
@require_GET
def calibrated_leaderboard(request: HttpRequest) -> HttpResponse:
    judges, judge_ids, asked = _judges(request)
    known = {j.judge_id for j in judges}
    unknown = [j for j in judge_ids if j not in known]
    if not asked:
        judge_ids = _calibrated_default(judges, judge_ids, calibratable_judges())
    board = calibrated_board(None if unknown else judge_ids)
    lines = [] if unknown else board.lines
    rows, axis = _rows(lines)
    by_id = {judge.judge_id: judge for judge in judges}
    context = {
        "rows": rows,
        "axis": axis,
        "judges": judges,
        "shown_judge": by_id.get(judge_ids[0]) if len(judge_ids) == 1 else None,
        "judge_query": ",".join(judge_ids) or ALL_JUDGES,
        "asked": asked,
        "all_judges": ALL_JUDGES,
        "unknown_judges": unknown,
        "has_calibration_study": bool(calibration.calibration_studies()),
        "unused": board.unused,
        "empty_reason": "" if lines else selectors.leaderboard_empty_reason(judge_ids=judge_ids),
        "min_topic_labels": calibration.MIN_TOPIC_LABELS,
        "n_calibrated": sum(row.calibrated is not None for row in rows),
    }
    return render(request, "annotation/calibrated_leaderboard.html", context)


@dataclass(frozen=True)
class TopicRow:
    topic: calibration.TopicScore
    shown: Percent | None
    human: Percent | None


@staff_required
@require_GET
def calibrated_generator(request: HttpRequest, generator_id: str) -> HttpResponse:
    """One generator's calibrated score per topic, under one judge (?judge=, else the default judge)."""
    generator = get_object_or_404(Generator, generator_id=generator_id)
    judges, judge_ids, _ = _judges(request)
    if len(judge_ids) != 1:
        raise Http404("name one judge: ?judge=<judge_id>")
    judge = get_object_or_404(Judge, judge_id=judge_ids[0])
    lines = [
        line
        for line in calibrated_board([judge.judge_id]).lines
        if line.generator_id == generator.generator_id
    ]
    if not lines:
        raise Http404(f"{judge.judge_id} has not judged {generator.generator_id}")
    (line,) = lines
    topics = [
        TopicRow(
            t,
            score_percent(t.score),
            percent(t.score.human_only, t.score.human_low, t.score.human_high) if t.score else None,
        )
        for t in line.topics
    ]
    context = {
        "line": line,
        "generator": generator,
        "judge": judge,
        "judges": judges,
        "calibrated": score_percent(line.overall),
        "stratified": score_percent(line.stratified),
        "strata": sorted(line.stratified.strata) if line.stratified else [],
        "topics": topics,
        "min_topic_labels": calibration.MIN_TOPIC_LABELS,
        "other_topics": calibration.OTHER_TOPICS,
    }
    return render(request, "annotation/calibrated_generator.html", context)
