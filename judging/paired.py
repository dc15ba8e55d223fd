"""Paired comparisons between generators under one judge (issue #12): can the judge tell two models apart?

Two generators are compared on the examples (procedures) both have a scored judgment on from that judge
(parse failures left out, as How2Score leaves them out). On each shared example a generator either passes
(no critical failure) or fails; the examples where exactly one of the two passes are the discordant ones:
`a_only` where only A passes, `b_only` where only B passes.

- Exact McNemar test, two-sided: under "the two pass equally often", a_only ~ Binomial(a_only + b_only, 1/2);
  p = min(1, 2 P(X <= min(a_only, b_only))) (scipy's binom.cdf), 1 when there is no discordant example.
  The same as scipy.stats.binomtest(a_only, a_only + b_only).pvalue and statsmodels' mcnemar(exact=True).
- Holm's step-down adjustment across all the pairs of generators of that judge (h2e_site/stats/rankings.py,
  equal to statsmodels' multipletests(method="holm")): a pair is separable when its adjusted p < 0.05.
- Separability of a judge: the share of its pairs that are separable (Arena-Hard's "separability").

Verdicts are read once per request into one matrix per judge (generators x examples); every count is then a
matrix product: a_only = passed @ failed.T. The same matrices serve the bootstrap of rankings.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Q

from h2e_site.stats.rankings import holm_adjusted

from . import selectors, versions
from .models import Generator, Judge, Judgment

if TYPE_CHECKING:
    import numpy as np

ALPHA = 0.05


@dataclass(frozen=True)
class Verdicts:
    """One judge's scored verdicts: generators (rows, by generator_id) x examples (columns, procedure pks)."""

    judge_id: str
    generator_ids: list[str]
    procedure_pks: np.ndarray
    passed: np.ndarray  # bool: scored, no critical failure
    failed: np.ndarray  # bool: scored, with a critical failure
    unparsed: np.ndarray  # bool: a parse failure (in no pair; counted as a failure by the strict score)

    def row(self, generator_id: str) -> int:
        return self.generator_ids.index(generator_id)


def load_verdicts(
    judge_ids: Iterable[str] | None = None, *, generator_pks: Iterable[int] | None = None
) -> dict[str, Verdicts]:
    """judge_id -> its Verdicts, from one grouped query (PostgreSQL: arrays of procedure pks per generator x
    judge, read off the leaderboard index; other databases: one row per judgment); `generator_pks`: only
    those generators' rows (a run's checkpoints)."""
    import numpy as np

    judgments = Judgment.objects.order_by()
    if judge_ids is not None:
        judgments = judgments.filter(judge__judge_id__in=list(judge_ids))
    if generator_pks is not None:
        judgments = judgments.filter(generator_id__in=list(generator_pks))
    groups = _pass_fail_groups(judgments)
    names = _ids_of(groups)
    by_judge: dict[str, dict[str, tuple[list[int], list[int], list[int]]]] = {}
    for (generator_pk, judge_pk), lists in groups.items():
        generator_id, judge_id = names[0][generator_pk], names[1][judge_pk]
        by_judge.setdefault(judge_id, {})[generator_id] = lists
    return {judge_id: _matrix(judge_id, rows, np) for judge_id, rows in sorted(by_judge.items())}


Groups = dict[tuple[int, int], tuple[list[int], list[int], list[int]]]


def _pass_fail_groups(judgments: Any) -> Groups:
    """(generator pk, judge pk) -> procedure pks it passed, failed, and whose judgment is a parse failure."""
    if connection.vendor == "postgresql":
        from django.contrib.postgres.aggregates import ArrayAgg

        scored = Q(parse_failed=False)
        rows = judgments.values("generator_id", "judge_id").annotate(
            passed=ArrayAgg("procedure_id", filter=scored & Q(has_failure=False), default=[]),
            failed=ArrayAgg("procedure_id", filter=scored & Q(has_failure=True), default=[]),
            unparsed=ArrayAgg("procedure_id", filter=Q(parse_failed=True), default=[]),
        )
        return {(r["generator_id"], r["judge_id"]): (r["passed"], r["failed"], r["unparsed"]) for r in rows}
    groups: Groups = {}
    for generator_pk, judge_pk, procedure_pk, has_failure, parse_failed in judgments.values_list(
        "generator_id", "judge_id", "procedure_id", "has_failure", "parse_failed"
    ).iterator(chunk_size=10_000):
        passed, failed, unparsed = groups.setdefault((generator_pk, judge_pk), ([], [], []))
        (unparsed if parse_failed else failed if has_failure else passed).append(procedure_pk)
    return groups


def _ids_of(groups: dict[tuple[int, int], Any]) -> tuple[dict[int, str], dict[int, str]]:
    generators = dict(
        Generator.objects.filter(pk__in={g for g, _ in groups}).values_list("pk", "generator_id")
    )
    judges = dict(Judge.objects.filter(pk__in={j for _, j in groups}).values_list("pk", "judge_id"))
    return generators, judges


def _matrix(judge_id: str, rows: dict[str, tuple[list[int], list[int], list[int]]], np: Any) -> Verdicts:
    generator_ids = sorted(rows)
    all_pks = [np.asarray(p + f + u, dtype=np.int64) for p, f, u in rows.values()]
    columns = np.unique(np.concatenate(all_pks))
    flags = [np.zeros((len(generator_ids), columns.size), dtype=bool) for _ in range(3)]
    for i, generator_id in enumerate(generator_ids):
        for flag, pks in zip(flags, rows[generator_id], strict=True):
            flag[i, np.searchsorted(columns, np.asarray(pks, dtype=np.int64))] = True
    return Verdicts(judge_id, generator_ids, columns, *flags)


# --- the tests ----------------------------------------------------------------------------------------------


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    from scipy.stats import binom

    n = a_only + b_only
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(a_only, b_only), n, 0.5)))


def _mcnemar_exact_ps(discordant: list[tuple[int, int]]) -> list[float]:
    """mcnemar_exact_p of many pairs in one vectorised call."""
    if not discordant:
        return []
    import numpy as np
    from scipy.stats import binom

    counts = np.asarray(discordant, dtype=np.int64)
    p = np.minimum(1.0, 2.0 * binom.cdf(counts.min(axis=1), counts.sum(axis=1), 0.5))
    return [float(value) for value in p]


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (h2e_site.stats.rankings.holm_adjusted)."""
    return holm_adjusted(p_values)


@dataclass(frozen=True)
class PairedTest:
    """Generator A vs B under one judge, on the examples both were scored on."""

    judge_id: str
    generator_a: str
    generator_b: str
    n_shared: int
    a_only: int  # discordant: A passes, B fails
    b_only: int  # discordant: B passes, A fails
    p_value: float
    p_holm: float

    @property
    def separable(self) -> bool:
        return self.p_holm < ALPHA

    @property
    def n_discordant(self) -> int:
        return self.a_only + self.b_only

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "generator_a": self.generator_a,
            "generator_b": self.generator_b,
            "n_shared": self.n_shared,
            "a_only": self.a_only,
            "b_only": self.b_only,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "separable": self.separable,
        }


@dataclass
class JudgePairs:
    """Every pair of generators under one judge, Holm-adjusted together."""

    judge_id: str
    tests: dict[frozenset[str], PairedTest] = field(default_factory=dict)

    def between(self, a: str, b: str) -> PairedTest | None:
        return self.tests.get(frozenset((a, b)))

    @property
    def n_pairs(self) -> int:
        return len(self.tests)

    @property
    def n_separable(self) -> int:
        return sum(test.separable for test in self.tests.values())

    @property
    def separability(self) -> float | None:
        """Share of the judge's pairs with Holm-adjusted p < 0.05 (None with fewer than two generators)."""
        return self.n_separable / self.n_pairs if self.n_pairs else None

    @property
    def separability_percent(self) -> float | None:
        return None if self.separability is None else 100.0 * self.separability

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "n_pairs": self.n_pairs,
            "n_separable": self.n_separable,
            "separability": self.separability,
            "pairs": [test.as_json() for test in self.tests.values()],
        }


def judge_pairs(verdicts: Verdicts) -> JudgePairs:
    """The exact McNemar test of every pair of the judge's generators, Holm-adjusted across them."""
    import numpy as np

    passed = verdicts.passed.astype(np.int32)
    failed = verdicts.failed.astype(np.int32)
    a_only = passed @ failed.T  # [i, j]: examples where i passes and j fails
    scored = passed + failed
    shared = scored @ scored.T
    pairs = list(combinations(range(len(verdicts.generator_ids)), 2))
    p_values = _mcnemar_exact_ps([(int(a_only[i, j]), int(a_only[j, i])) for i, j in pairs])
    result = JudgePairs(verdicts.judge_id)
    for (i, j), p, adjusted in zip(pairs, p_values, holm(p_values), strict=True):
        a, b = verdicts.generator_ids[i], verdicts.generator_ids[j]
        result.tests[frozenset((a, b))] = PairedTest(
            verdicts.judge_id, a, b, int(shared[i, j]), int(a_only[i, j]), int(a_only[j, i]), p, adjusted
        )
    return result


def leaderboard_paired_json(
    rows: list[selectors.LeaderboardRow], pairs: dict[str, JudgePairs]
) -> list[dict[str, Any]]:
    """The leaderboard's API/CSV objects with, per row, its paired test against the next row down."""
    objects = selectors.leaderboard_metrics_json(rows)
    below = [*rows[1:], None]
    for obj, row, next_row in zip(objects, rows, below, strict=False):
        judge_pairs = pairs.get(row.judge_id)
        test = (
            judge_pairs.between(row.generator_id, next_row.generator_id)
            if judge_pairs and next_row is not None and next_row.judge_id == row.judge_id
            else None
        )
        obj["p_holm_next"] = test.p_holm if test else None
        obj["separable_from_next"] = test.separable if test else None
    return objects


def paired_tests(
    judge_ids: Iterable[str] | None = None, *, n_judgments: int | None = None
) -> dict[str, JudgePairs]:
    """judge_id -> the paired tests between its generators (cached for the judgments' version;
    `n_judgments`: how many judgments those judges have, when the caller knows)."""
    wanted = None if judge_ids is None else sorted(set(judge_ids))

    def compute() -> dict[str, JudgePairs]:
        return {judge_id: judge_pairs(v) for judge_id, v in load_verdicts(wanted).items()}

    version = versions.judgments_version(judge_ids=wanted, n_judgments=n_judgments)
    return versions.cached(f"paired:{wanted}", compute, version=version)


__all__ = [
    "ALPHA",
    "JudgePairs",
    "PairedTest",
    "Verdicts",
    "holm",
    "judge_pairs",
    "leaderboard_paired_json",
    "load_verdicts",
    "mcnemar_exact_p",
    "paired_tests",
]
