"""What a judge is like as an instrument, from judge data alone (the report card's judging half; the human
agreement half is annotation/kinds/critical_failures/report_card.py):

- instrument failures: parse failures (a judgment, left out of How2Score) and requests that failed (a
  JudgeError: no judgment at all), never counted as failures of the generator;
- length bias as in the paper's §D.5: a logistic regression (statsmodels' Logit, maximum likelihood) of the
  no-failure verdict on rho = 100 x generated tokens / reference tokens, controlling for the reference step
  count, the resource count and the topic (fixed effects, the first topic by name as baseline); reported as
  the odds ratio per +1 point of rho with its Wald 95 % interval exp(beta +- 1.96 se);
- agreement with each other judge, item by item (generations both judged, parse failures left out): raw
  agreement and Cohen's kappa (undefined by h2e_site.stats' one rule: fewer than 2 items, or one label
  throughout);
- cost and latency per judgment, from the usage its judge jobs recorded (h2e_site.jobs.loop.Usage) and the
  optional prices in configs/prices.yaml;
- flips: where the judge was re-run on generations it had judged, the share of verdicts that changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.db.models import Count, F, Func, IntegerField, Q

from h2e_site.jobs.models import Job
from h2e_site.stats import Coefficient, Share
from h2e_site.stats.agreement import Confusion, observed_agreement
from h2e_site.stats.agreement import kappa as kappa_of
from judging.job_kinds import JUDGE
from judging.models import Judge, JudgeError, Judgment

PRICES_FILE = Path("configs/prices.yaml")
MIN_REGRESSION_EXAMPLES = 20


@dataclass(frozen=True)
class Instrument:
    n_judgments: int
    parse_failures: Share  # of the judgments
    n_errors: int  # requests that failed: no judgment

    def as_json(self) -> dict[str, Any]:
        return {
            "n_judgments": self.n_judgments,
            "parse_failures": self.parse_failures.as_json(),
            "n_request_errors": self.n_errors,
        }


def instrument(judge: Judge) -> Instrument:
    counts = Judgment.objects.filter(judge=judge).aggregate(
        n=Count("id"), parse_failed=Count("id", filter=Q(parse_failed=True))
    )
    return Instrument(
        counts["n"],
        Share(counts["parse_failed"], counts["n"]),
        JudgeError.objects.filter(judge=judge).count(),
    )


# --- length bias (§D.5) -------------------------------------------------------------------------------------


class JSONArrayLength(Func):
    """The length of a JSON array column (PostgreSQL jsonb_array_length, SQLite json_array_length)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return super().as_sql(compiler, connection, function="json_array_length", **extra)


@dataclass(frozen=True)
class LengthBias:
    n: int
    odds_ratio: float | None = None  # per +1 point of rho
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    odds_ratio_steps: float | None = None  # per reference step, for context
    problem: str = ""  # why it could not be estimated

    @property
    def percent_per_10_points(self) -> float | None:
        """The change in the odds of no failure for +10 points of rho, in percent."""
        return None if self.odds_ratio is None else 100.0 * (self.odds_ratio**10 - 1)

    def as_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "odds_ratio_per_ratio_point": self.odds_ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "odds_ratio_per_reference_step": self.odds_ratio_steps,
            "problem": self.problem,
        }


def length_bias_rows(judge: Judge) -> list[tuple[bool, float, int, int, int | None]]:
    """(no failure, rho, reference steps, resources, topic pk) of each scored judgment with token counts."""
    rows = (
        Judgment.objects.filter(
            judge=judge,
            parse_failed=False,
            generation__n_tokens__isnull=False,
            procedure__n_tokens__gt=0,
        )
        .order_by()
        .values_list(
            "has_failure",
            "generation__n_tokens",
            "procedure__n_tokens",
            JSONArrayLength(F("procedure__steps")),
            JSONArrayLength(F("procedure__resources")),
            "topic_id",
        )
    )
    return [
        (not fail, 100.0 * gen / ref, steps, resources, topic)
        for fail, gen, ref, steps, resources, topic in rows
    ]


def length_bias(rows: list[tuple[bool, float, int, int, int | None]]) -> LengthBias:
    """The §D.5 regression on (no failure, rho, reference steps, resources, topic) rows."""
    import numpy as np

    n = len(rows)
    outcomes = {row[0] for row in rows}
    if n < MIN_REGRESSION_EXAMPLES or len(outcomes) < 2:
        why = f"{n} examples" if n < MIN_REGRESSION_EXAMPLES else "every verdict is the same"
        return LengthBias(n, problem=f"not estimable: {why}")
    y = np.array([row[0] for row in rows], dtype=float)
    topics = sorted({row[4] for row in rows}, key=lambda t: (t is None, t or 0))
    data = np.array([row[1:4] for row in rows], dtype=float)  # rho, reference steps, resources
    topic_of = [row[4] for row in rows]
    dummies = [np.array([t == topic for t in topic_of], dtype=float) for topic in topics[1:]]
    x = np.column_stack([np.ones(n), data, *dummies])
    x = x[:, _independent_columns(x)]
    return _fit(y, x, n)


def _independent_columns(x: Any) -> list[int]:
    """Columns kept so the design has full rank (a covariate constant over the data adds nothing): the
    intercept and rho always; any other column that is constant or collinear with those kept is dropped.
    Decided on the Gram matrix of the columns scaled to unit length (k x k, whatever the number of rows)."""
    import numpy as np

    norms = np.sqrt((x * x).sum(axis=0))
    scaled = x / np.where(norms > 0, norms, 1.0)
    gram = scaled.T @ scaled
    kept: list[int] = []
    for j in range(x.shape[1]):
        trial = [*kept, j]
        if j < 2 or np.linalg.matrix_rank(gram[np.ix_(trial, trial)], tol=1e-10) == len(trial):
            kept.append(j)
    return kept


def _fit(y: Any, x: Any, n: int) -> LengthBias:
    import numpy as np
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationError

    try:
        result = sm.Logit(y, x).fit(disp=0, maxiter=100)
    except (PerfectSeparationError, np.linalg.LinAlgError) as exc:
        return LengthBias(n, problem=f"not estimable: {exc}")
    beta, se = float(result.params[1]), float(result.bse[1])
    if not (math.isfinite(beta) and math.isfinite(se)):
        return LengthBias(n, problem="not estimable: the fit did not converge")
    steps = float(np.exp(result.params[2])) if x.shape[1] > 2 else None
    return LengthBias(
        n,
        odds_ratio=math.exp(beta),
        ci_low=math.exp(beta - 1.959964 * se),
        ci_high=math.exp(beta + 1.959964 * se),
        p_value=float(result.pvalues[1]),
        odds_ratio_steps=steps,
    )


# --- other judges, cost, flips ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgePair:
    other: Judge
    confusion: Confusion  # [this judge has_failure][other judge has_failure]

    @property
    def n(self) -> int:
        return sum(self.confusion[a][b] for a in (True, False) for b in (True, False))

    @property
    def agreement(self) -> float | None:
        return observed_agreement(self.confusion)

    @property
    def kappa(self) -> Coefficient:
        """Cohen's kappa, with why it is undefined when it is."""
        return kappa_of(self.confusion)

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.other.judge_id,
            "model": self.other.model,
            "n": self.n,
            "agreement": self.agreement,
            "cohen_kappa": self.kappa.value,
            "cohen_kappa_undefined": self.kappa.undefined,
        }


def _empty_confusion() -> Confusion:
    return {True: {True: 0, False: 0}, False: {True: 0, False: 0}}


def other_judges(judge: Judge) -> list[JudgePair]:
    """Agreement with every other judge on the generations both judged (one grouped query)."""
    # The other judges' scored judgments joined to this judge's on the same generation, counted per other
    # judge x both verdicts.
    grouped = (
        Judgment.objects.filter(generation__judgments__judge=judge, generation__judgments__parse_failed=False)
        .filter(parse_failed=False)
        .exclude(judge=judge)
        .order_by()
        .values("judge_id", "has_failure", "generation__judgments__has_failure")
        .annotate(n=Count("id"))
    )
    confusions: dict[int, Confusion] = {}
    for row in grouped:
        confusion = confusions.setdefault(row["judge_id"], _empty_confusion())
        confusion[row["generation__judgments__has_failure"]][row["has_failure"]] += row["n"]
    judges = Judge.objects.in_bulk(list(confusions))
    pairs = [JudgePair(judges[pk], confusion) for pk, confusion in confusions.items()]
    return sorted(pairs, key=lambda p: (p.other.model, p.other.judge_id))


@dataclass(frozen=True)
class Cost:
    n_jobs: int
    n_answered: int  # requests answered, as the jobs recorded them
    prompt_tokens: int
    completion_tokens: int
    n_without_tokens: int
    latency_s: float
    usd_per_million: tuple[float, float] | None  # (prompt, completion), from configs/prices.yaml

    @property
    def latency_per_judgment_s(self) -> float | None:
        return self.latency_s / self.n_answered if self.n_answered else None

    @property
    def tokens_per_judgment(self) -> tuple[float, float] | None:
        counted = self.n_answered - self.n_without_tokens
        return (self.prompt_tokens / counted, self.completion_tokens / counted) if counted > 0 else None

    @property
    def usd_per_judgment(self) -> float | None:
        tokens = self.tokens_per_judgment
        if tokens is None or self.usd_per_million is None:
            return None
        return (tokens[0] * self.usd_per_million[0] + tokens[1] * self.usd_per_million[1]) / 1e6

    def as_json(self) -> dict[str, Any]:
        tokens = self.tokens_per_judgment
        return {
            "n_jobs": self.n_jobs,
            "n_answered": self.n_answered,
            "prompt_tokens_per_judgment": tokens[0] if tokens else None,
            "completion_tokens_per_judgment": tokens[1] if tokens else None,
            "latency_per_judgment_s": self.latency_per_judgment_s,
            "usd_per_judgment": self.usd_per_judgment,
        }


def prices(model: str, path: Path | None = None) -> tuple[float, float] | None:
    """(USD per million prompt tokens, per million completion tokens) of a model, from configs/prices.yaml
    (`model: {prompt: x, completion: y}`); None when the file or the model is not there."""
    file = path or Path(settings.BASE_DIR) / PRICES_FILE
    try:
        table = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return None
    entry = table.get(model) if isinstance(table, dict) else None
    if not isinstance(entry, dict):
        return None
    return float(entry["prompt"]), float(entry["completion"])


def cost(judge: Judge) -> Cost:
    usages = [
        job.parameters.get("usage") or {}
        for job in Job.objects.filter(kind=JUDGE, parameters__judge=judge.pk).only("parameters")
    ]
    return Cost(
        n_jobs=len(usages),
        n_answered=sum(u.get("n", 0) for u in usages),
        prompt_tokens=sum(u.get("prompt_tokens", 0) for u in usages),
        completion_tokens=sum(u.get("completion_tokens", 0) for u in usages),
        n_without_tokens=sum(u.get("n_without_tokens", 0) for u in usages),
        latency_s=sum(u.get("latency_s", 0.0) for u in usages),
        usd_per_million=prices(judge.model),
    )


def flips(judge: Judge) -> Share:
    """Of the verdicts that replaced a verdict of the same judge on the same generation, how many differ."""
    rerun = Judgment.objects.filter(judge=judge, parse_failed=False, previous_has_failure__isnull=False)
    counts = rerun.aggregate(
        n=Count("id"), flipped=Count("id", filter=~Q(previous_has_failure=F("has_failure")))
    )
    return Share(counts["flipped"], counts["n"])


__all__ = [
    "Cost",
    "Instrument",
    "JudgePair",
    "LengthBias",
    "Share",
    "cost",
    "flips",
    "instrument",
    "length_bias",
    "length_bias_rows",
    "other_judges",
    "prices",
]
