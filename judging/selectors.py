"""Reads behind the leaderboards: How2Score computed by SQL aggregates over Judgment rows.

The h2e-compatible score follows the reference CLI's `aggregate_judgments` exactly: parse failures are
excluded (n_examples = total - n_parse_failed), n_with_failures counts has_failure among the rest,
how2score = 1 - n_with_failures / n_examples, avg_failures_per_example = sum(n_failures) / n_examples, and
every ratio is 0.0 when n_examples is 0. The strict score counts parse failures as failures.

Per-generator metrics (generator_metrics) are SQL averages over Generation rows without an error: tokens and
the gen/ref ratio (paper D.5), the format proxies (paper D.3); see GeneratorMetrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Avg,
    Case,
    Count,
    Exists,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)

from h2e_site.stats import wilson_interval
from mining.models import Procedure

from .models import Generation, Generator, Judge, Judgment

_SCORED = Q(parse_failed=False)
# Rows are counted on judge_id, never NULL and a key of the judgment_leaderboard index (which includes the
# verdict fields): PostgreSQL then answers from the index alone. COUNT(id) read the table (~470 MB at
# 280,000 judgments: 0.3 s against 0.1 s). Django refuses Count("*") with a filter.
_ROW = "judge_id"
_COUNTS = {
    "total": Count(_ROW),
    "n_parse_failed": Count(_ROW, filter=Q(parse_failed=True)),
    "n_with_failures": Count(_ROW, filter=_SCORED & Q(has_failure=True)),
    "sum_failures": Sum("n_failures", filter=_SCORED, default=0),
}


@dataclass(frozen=True)
class How2Score:
    """How2Score figures for one group of judgments (a generator x judge, optionally one topic)."""

    total: int
    n_parse_failed: int
    n_with_failures: int
    sum_failures: int

    @property
    def n_examples(self) -> int:
        return self.total - self.n_parse_failed

    @property
    def failure_rate(self) -> float:
        return (self.n_with_failures / self.n_examples) if self.n_examples else 0.0

    @property
    def how2score(self) -> float:
        return (1.0 - self.failure_rate) if self.n_examples else 0.0

    @property
    def how2score_percent(self) -> float:
        return 100.0 * self.how2score

    @property
    def avg_failures_per_example(self) -> float:
        return (self.sum_failures / self.n_examples) if self.n_examples else 0.0

    @property
    def strict_how2score(self) -> float:
        """Parse failures count as failures: share of all judged examples with no failure and a parse."""
        if not self.total:
            return 0.0
        return 1.0 - (self.n_with_failures + self.n_parse_failed) / self.total

    @property
    def strict_how2score_percent(self) -> float:
        return 100.0 * self.strict_how2score

    @property
    def interval_percent(self) -> tuple[float, float] | None:
        """95 % Wilson score interval of How2Score (examples with no critical failure among the scored)."""
        return _percent_interval(self.n_examples - self.n_with_failures, self.n_examples)

    @property
    def interval_width_percent(self) -> float:
        """How wide the How2Score interval is, in points (0 without examples): for drawing it."""
        interval = self.interval_percent
        return interval[1] - interval[0] if interval else 0.0

    @property
    def strict_interval_percent(self) -> tuple[float, float] | None:
        """95 % Wilson score interval of the strict score (parse failures count as failures)."""
        return _percent_interval(self.total - self.n_with_failures - self.n_parse_failed, self.total)

    def summary_json(self) -> dict[str, Any]:
        """The reference's aggregate/summary.json, key for key."""
        summary: dict[str, Any] = {
            "how2score": self.how2score,
            "how2score_percent": self.how2score_percent,
            "n_examples": self.n_examples,
            "n_with_failures": self.n_with_failures,
            "failure_rate": self.failure_rate,
            "avg_failures_per_example": self.avg_failures_per_example,
        }
        if self.n_parse_failed:
            summary["n_parse_failed"] = self.n_parse_failed
        return summary

    def by_topic_row(self, topic: str) -> dict[str, Any]:
        """One row of the reference's aggregate/by_topic.csv (n_judged = scored examples)."""
        row: dict[str, Any] = {
            "topic": topic,
            "n_judged": self.n_examples,
            "n_with_failures": self.n_with_failures,
            "how2score": self.how2score,
            "how2score_percent": self.how2score_percent,
            "failure_rate": self.failure_rate,
            "avg_failures_per_example": self.avg_failures_per_example,
        }
        if self.n_parse_failed:
            row["n_parse_failed"] = self.n_parse_failed
        return row


def _percent_interval(successes: int, n: int) -> tuple[float, float] | None:
    interval = wilson_interval(successes, n)
    return None if interval is None else (100.0 * interval[0], 100.0 * interval[1])


def _score(row: Mapping[str, Any]) -> How2Score:
    return How2Score(
        total=row["total"],
        n_parse_failed=row["n_parse_failed"],
        n_with_failures=row["n_with_failures"],
        sum_failures=int(row["sum_failures"] or 0),
    )


def _interval_json(name: str, interval: tuple[float, float] | None) -> dict[str, float | None]:
    low, high = interval if interval is not None else (None, None)
    return {f"{name}_ci_low": low, f"{name}_ci_high": high}


@dataclass(frozen=True)
class LeaderboardRow:
    generator_model: str
    generator_id: str
    judge_model: str
    judge_id: str
    score: How2Score

    def as_json(self) -> dict[str, Any]:
        """The `leaderboard --format json` / API object."""
        return {
            "generator_model": self.generator_model,
            "generator_id": self.generator_id,
            "judge_model": self.judge_model,
            "judge_id": self.judge_id,
            "how2score_percent": self.score.how2score_percent,
            **_interval_json("how2score", self.score.interval_percent),
            "strict_how2score_percent": self.score.strict_how2score_percent,
            **_interval_json("strict_how2score", self.score.strict_interval_percent),
            "n_examples": self.score.n_examples,
            "n_with_failures": self.score.n_with_failures,
            "n_parse_failed": self.score.n_parse_failed,
            "avg_failures_per_example": self.score.avg_failures_per_example,
        }


@dataclass(frozen=True)
class TopicLeaderboardRow:
    generator_model: str
    generator_id: str
    judge_model: str
    judge_id: str
    topic: str
    score: How2Score

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            **LeaderboardRow(
                self.generator_model, self.generator_id, self.judge_model, self.judge_id, self.score
            ).as_json(),
        }


def _judgments(
    *, judge_ids: Iterable[str] | None = None, generator_ids: Iterable[str] | None = None
) -> QuerySet[Judgment]:
    qs = Judgment.objects.all()
    if judge_ids:
        qs = qs.filter(judge__judge_id__in=list(judge_ids))
    if generator_ids:
        qs = qs.filter(generator__generator_id__in=list(generator_ids))
    return qs.order_by()


def leaderboard_empty_reason(*, judge_ids: Iterable[str] = ()) -> str:
    """Why the leaderboard has no row (asked only when it has none): an unknown judge_id, a judge with no
    judgment, or, for every judge, no reference procedure, no generation, no judge, or no judgment."""
    wanted = list(judge_ids)
    if wanted:
        known = set(Judge.objects.filter(judge_id__in=wanted).values_list("judge_id", flat=True))
        unknown = [judge_id for judge_id in wanted if judge_id not in known]
        if unknown:
            return f"No judge has the judge_id {', '.join(unknown)}."
        return "This judge has no judgment yet: judge generations with it first."
    if not Procedure.objects.exists():
        return "No reference procedure (L1) has been imported yet."
    if not Generation.objects.exists():
        return "Reference procedures are imported, but no generator has answered them (no L2) yet."
    if not Judge.objects.exists():
        return "Generations (L2) are stored, but no judge exists yet to judge them."
    return "Generations (L2) and judges exist, but no generation has been judged yet."


def how2score_leaderboard(
    *, judge_ids: Iterable[str] | None = None, generator_ids: Iterable[str] | None = None
) -> list[LeaderboardRow]:
    """How2Score per generator x judge, grouped by judge, best generator first (ties by model, then id)."""
    grouped = (
        _judgments(judge_ids=judge_ids, generator_ids=generator_ids)
        .values("generator_id", "judge_id")
        .annotate(**_COUNTS)
    )
    counts = {(r["generator_id"], r["judge_id"]): _score(r) for r in grouped}
    names = _names_for(counts.keys())
    rows = [
        LeaderboardRow(*names[key], score=score)  # type: ignore[misc]
        for key, score in counts.items()
    ]
    # Scores are comparable only under one judge: group by judge, best generator first within it.
    rows.sort(
        key=lambda r: (r.judge_model, r.judge_id, -r.score.how2score, r.generator_model, r.generator_id)
    )
    return rows


def how2score_by_topic(
    *, judge_ids: Iterable[str] | None = None, generator_ids: Iterable[str] | None = None
) -> list[TopicLeaderboardRow]:
    """How2Score per generator x judge x topic (topic "" where a judgment has none), sorted by topic."""
    grouped = (
        _judgments(judge_ids=judge_ids, generator_ids=generator_ids)
        .values("generator_id", "judge_id", "topic__name")
        .annotate(**_COUNTS)
    )
    scores = [((r["generator_id"], r["judge_id"]), r["topic__name"] or "", _score(r)) for r in grouped]
    names = _names_for({key for key, _, _ in scores})
    rows = [TopicLeaderboardRow(*names[key], topic=topic, score=score) for key, topic, score in scores]  # type: ignore[misc]
    rows.sort(key=lambda r: (r.generator_model, r.generator_id, r.judge_id, r.topic))
    return rows


def _names_for(keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple[str, str, str, str]]:
    """(generator pk, judge pk) -> (generator_model, generator_id, judge_model, judge_id)."""

    keys = list(keys)
    generators = {
        g["pk"]: (g["model"], g["generator_id"])
        for g in Generator.objects.filter(pk__in={k[0] for k in keys}).values("pk", "model", "generator_id")
    }
    judges = {
        j["pk"]: (j["model"], j["judge_id"])
        for j in Judge.objects.filter(pk__in={k[1] for k in keys}).values("pk", "model", "judge_id")
    }
    return {key: (*generators[key[0]], *judges[key[1]]) for key in keys}


def how2score_for(*, generator_pk: int, judge_pk: int) -> How2Score:
    """How2Score of one generator x judge (the figures of aggregate/summary.json)."""
    row = Judgment.objects.filter(generator_id=generator_pk, judge_id=judge_pk).aggregate(**_COUNTS)
    return _score(row)


def how2score_topics_for(*, generator_pk: int, judge_pk: int) -> list[tuple[str, How2Score]]:
    """Per-topic How2Score of one generator x judge, sorted by topic (aggregate/by_topic.csv)."""
    grouped = (
        Judgment.objects.filter(generator_id=generator_pk, judge_id=judge_pk)
        .order_by()
        .values("topic__name")
        .annotate(**_COUNTS)
    )
    rows = [(r["topic__name"] or "", _score(r)) for r in grouped]
    return sorted(rows, key=lambda item: item[0])


# The paper's main judge is How2Judge (its distilled 8B judge); imported runs name it in the model.
MAIN_JUDGE_NAME = "how2judge"


def default_judge(judges: Sequence[Judge]) -> Judge | None:
    """The judge the pages show when none is asked for: the paper's main judge (a judge that is not a demo
    model and whose model names How2Judge), else the judge that is not a demo model with the most judgments,
    else the one with the most judgments; ties go to the first in `judges`' order. None without judgments.

    One index look-up per judge finds which have judgments; judgments are counted only when several judges
    are left to choose from (not when the paper's judge is there)."""
    has_judgments = Exists(Judgment.objects.filter(judge=OuterRef("pk")))
    judged_pks = set(Judge.objects.filter(has_judgments).values_list("pk", flat=True))
    judged = [j for j in judges if j.pk in judged_pks]
    real = [j for j in judged if not j.is_demo_model]
    main = [j for j in real if MAIN_JUDGE_NAME in j.model.lower().replace("-", "").replace(" ", "")]
    candidates = main or real or judged
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    grouped = (
        Judgment.objects.filter(judge__in=candidates).order_by().values("judge_id").annotate(n=Count("id"))
    )
    counts: dict[int, int] = {row["judge_id"]: row["n"] for row in grouped}
    return max(candidates, key=lambda j: counts.get(j.pk, 0))  # max keeps the first of equals


def leaderboard_json(rows: Iterable[LeaderboardRow]) -> list[dict[str, Any]]:
    return [row.as_json() for row in rows]


# --- Per-generator metrics (paper D.3 format proxies, D.5 tokens) ---------------------------------------

_HAS_METRICS = Q(
    n_tokens__isnull=False,
    step_count_mismatch__isnull=False,
    duplicate_step_rate__isnull=False,
    duplicate_ngram_rate__isnull=False,
)
_METRIC_AGGREGATES = {
    "n_generations": Count("id"),
    "n_with_metrics": Count("id", filter=_HAS_METRICS),
    "avg_tokens": Avg("n_tokens", output_field=FloatField()),
    # rho per example (paper D.5), then averaged; undefined where the reference has no tokens.
    "avg_ratio": Avg(
        Case(
            When(
                n_tokens__isnull=False,
                procedure__n_tokens__gt=0,
                then=Value(100.0) * F("n_tokens") / F("procedure__n_tokens"),
            ),
            output_field=FloatField(),
        )
    ),
    "mismatch": Avg(
        Case(
            When(step_count_mismatch=True, then=Value(1.0)),
            When(step_count_mismatch=False, then=Value(0.0)),
            output_field=FloatField(),
        )
    ),
    # The paper's "duplicate steps": share of examples with any verbatim repeated step.
    "dup_step": Avg(
        Case(
            When(duplicate_step_rate__gt=0, then=Value(1.0)),
            When(duplicate_step_rate__isnull=False, then=Value(0.0)),
            output_field=FloatField(),
        )
    ),
    "dup_ngram": Avg("duplicate_ngram_rate", output_field=FloatField()),
}


def _percent(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


@dataclass(frozen=True)
class GeneratorMetrics:
    """Averages over a generator's generations that have no error; None where no generation has the metric.

    Percentages as in the paper's Table 9: step-count mismatch = % of examples whose step count differs from
    the reference; duplicate steps = % of examples with a verbatim repeated step; duplicate n-gram rate =
    mean over examples of the per-example rate averaged over n = 1..4. gen/ref ratio = mean per-example
    rho = 100 * |gen tokens| / |ref tokens| (paper D.5), examples without reference tokens left out.
    """

    n_generations: int = 0
    n_with_metrics: int = 0
    generator_pk: int | None = None  # the Generator row (not part of the JSON)
    avg_tokens: float | None = None
    gen_ref_ratio_percent: float | None = None
    step_count_mismatch_percent: float | None = None
    duplicate_step_percent: float | None = None
    duplicate_ngram_percent: float | None = None

    @property
    def is_complete(self) -> bool:
        return self.n_with_metrics == self.n_generations

    def as_json(self) -> dict[str, Any]:
        return {
            "n_generations": self.n_generations,
            "n_with_metrics": self.n_with_metrics,
            "avg_tokens": self.avg_tokens,
            "gen_ref_ratio_percent": self.gen_ref_ratio_percent,
            "step_count_mismatch_percent": self.step_count_mismatch_percent,
            "duplicate_step_percent": self.duplicate_step_percent,
            "duplicate_ngram_percent": self.duplicate_ngram_percent,
        }


def generator_metrics(*, generator_ids: Iterable[str] | None = None) -> dict[str, GeneratorMetrics]:
    """generator_id -> its metrics, by one grouped SQL aggregate over Generation rows without an error."""
    qs = Generation.objects.filter(error="")
    if generator_ids is not None:
        qs = qs.filter(generator__generator_id__in=list(generator_ids))
    grouped: Iterable[dict[str, Any]] = (
        qs.order_by().values("generator_id", "generator__generator_id").annotate(**_METRIC_AGGREGATES)  # type: ignore[assignment]
    )
    return {
        row["generator__generator_id"]: GeneratorMetrics(
            generator_pk=row["generator_id"],
            n_generations=row["n_generations"],
            n_with_metrics=row["n_with_metrics"],
            avg_tokens=row["avg_tokens"],
            gen_ref_ratio_percent=row["avg_ratio"],
            step_count_mismatch_percent=_percent(row["mismatch"]),
            duplicate_step_percent=_percent(row["dup_step"]),
            duplicate_ngram_percent=_percent(row["dup_ngram"]),
        )
        for row in grouped
    }


def leaderboard_with_metrics(
    rows: Iterable[LeaderboardRow],
) -> list[tuple[LeaderboardRow, GeneratorMetrics]]:
    """Each leaderboard row with its generator's metrics (empty metrics for a generator without L2)."""
    rows = list(rows)
    metrics = generator_metrics(generator_ids={r.generator_id for r in rows})
    return [(row, metrics.get(row.generator_id, GeneratorMetrics())) for row in rows]


def coverage_percent(score: How2Score, metrics: GeneratorMetrics) -> float | None:
    """How much of the generator's work the judge has judged: judgments / the generator's generations with
    an L2, in percent (None when the generator has none). A row under 100 % is a partial run (a cancelled or
    unfinished job): ranked, but marked."""
    return 100.0 * score.total / metrics.n_generations if metrics.n_generations else None


def leaderboard_metrics_json(rows: Iterable[LeaderboardRow]) -> list[dict[str, Any]]:
    """The leaderboard API/CSV objects: the h2e keys of LeaderboardRow.as_json(), the row's coverage, then
    the generator's metrics."""
    return [
        {**row.as_json(), "coverage_percent": coverage_percent(row.score, metrics), **metrics.as_json()}
        for row, metrics in leaderboard_with_metrics(rows)
    ]


__all__ = [
    "MAIN_JUDGE_NAME",
    "GeneratorMetrics",
    "How2Score",
    "LeaderboardRow",
    "TopicLeaderboardRow",
    "default_judge",
    "generator_metrics",
    "how2score_by_topic",
    "how2score_for",
    "how2score_leaderboard",
    "how2score_topics_for",
    "leaderboard_json",
    "leaderboard_metrics_json",
    "leaderboard_with_metrics",
]


def generator_names(generator_ids: Iterable[str]) -> dict[str, str]:
    """generator_id -> the name the pages show for it: its model, with the id's first 8 characters when two
    of the generators share a model (an id no row has stays as it is)."""
    rows = list(
        Generator.objects.filter(generator_id__in=set(generator_ids)).values_list("generator_id", "model")
    )
    models = [model for _, model in rows]
    return {
        generator_id: model if models.count(model) == 1 else f"{model} ({generator_id[:8]})"
        for generator_id, model in rows
    }
