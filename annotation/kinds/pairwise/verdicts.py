"""A pairwise judge's verdicts read back (judging/pairwise_jobs.py writes them; the pairwise kind reads them,
data.py): per pair, the verdict of each order and whether it flips with the order; and as
comparisons.Comparison records, so that flip_rate, position_bias, judge_human_agreement and bradley_terry
read a judge's answers as they read a study's.

A pair is (a, b), a < b (generation pks); "ab" showed A first. Canonical verdicts here are said of the pair's
A and B ("a_better", "b_better", "tie_none", "tie_fail"); a flip is two readable orders whose canonical
verdicts differ. In Comparison records the generators are named by generator_id, `left` is the generator
shown first, the outcome is said as shown ("first" -> "left", "second" -> "right"), the coder is the judge's
judge_id; a parse failure is no record.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from annotation.kinds.pairwise.comparisons import A_BETTER, B_BETTER, TIE_FAIL, TIE_NONE, Comparison
from judging.models import Judge, PairwiseJudgment, PairwiseOrder, PairwiseVerdict

Pair = tuple[int, int]
_SHOWN_AS = {PairwiseVerdict.FIRST.value: "left", PairwiseVerdict.SECOND.value: "right"}
_TIES = {PairwiseVerdict.BOTH_NONE.value: TIE_NONE, PairwiseVerdict.BOTH_FAIL.value: TIE_FAIL}


def canonical_verdict(order: str, verdict: str) -> str | None:
    """The verdict said of the pair's A and B (None for a parse failure)."""
    if not verdict:
        return None
    if verdict in _TIES:
        return _TIES[verdict]
    a_first = order == PairwiseOrder.AB
    return A_BETTER if (verdict == PairwiseVerdict.FIRST) == a_first else B_BETTER


@dataclass(frozen=True)
class PairVerdicts:
    """One pair's verdicts by one judge: as shown in each order ("" a parse failure, None not asked)."""

    generation_a: int
    generation_b: int
    procedure_id: int
    generator_a: str  # generator_id of generation_a's generator
    generator_b: str
    ab: str | None = None  # A shown first
    ba: str | None = None  # B shown first

    @property
    def pair(self) -> Pair:
        return self.generation_a, self.generation_b

    @property
    def canonical_ab(self) -> str | None:
        return canonical_verdict(PairwiseOrder.AB, self.ab or "")

    @property
    def canonical_ba(self) -> str | None:
        return canonical_verdict(PairwiseOrder.BA, self.ba or "")

    @property
    def flipped(self) -> bool | None:
        """Whether the verdict changed with the order; None unless both orders have a verdict."""
        if self.canonical_ab is None or self.canonical_ba is None:
            return None
        return self.canonical_ab != self.canonical_ba


def _pair_key(pair: Sequence[int]) -> Pair:
    a, b = (int(pk) for pk in pair)
    return min(a, b), max(a, b)


def pairwise_verdicts(
    judge: Judge, pairs: Iterable[Sequence[int]] | None = None, *, prompt_sha256: str | None = None
) -> list[PairVerdicts]:
    """The judge's verdicts on each pair it has a row for (only those of `pairs`, in either order, when given;
    only rows asked with the prompt hashed `prompt_sha256`, when given), by pair."""
    rows = PairwiseJudgment.objects.filter(judge=judge)
    wanted = None if pairs is None else {_pair_key(pair) for pair in pairs}
    if wanted is not None:
        rows = rows.filter(
            generation_a_id__in={a for a, _ in wanted}, generation_b_id__in={b for _, b in wanted}
        )
    if prompt_sha256 is not None:
        rows = rows.filter(prompt_sha256=prompt_sha256)
    found: dict[Pair, PairVerdicts] = {}
    for a, b, order, verdict, procedure, gen_a, gen_b in rows.order_by().values_list(
        "generation_a_id",
        "generation_b_id",
        "order",
        "verdict",
        "generation_a__procedure_id",
        "generation_a__generator__generator_id",
        "generation_b__generator__generator_id",
    ):
        if wanted is not None and (a, b) not in wanted:
            continue
        known = found.get((a, b)) or PairVerdicts(a, b, procedure, gen_a, gen_b)
        found[a, b] = PairVerdicts(
            a,
            b,
            procedure,
            gen_a,
            gen_b,
            verdict if order == PairwiseOrder.AB else known.ab,
            verdict if order == PairwiseOrder.BA else known.ba,
        )
    return [found[pair] for pair in sorted(found)]


def comparisons_of(
    verdicts: Iterable[PairVerdicts], *, coder: Hashable, items: Mapping[Pair, Hashable] | None = None
) -> list[Comparison]:
    """Each readable verdict as a Comparison record (module doc); the item is `items[(a, b)]` when given
    (e.g. the study item showing the pair), else the pair itself."""
    records = []
    for v in verdicts:
        item = items[v.pair] if items is not None else v.pair
        for order, verdict in ((PairwiseOrder.AB, v.ab), (PairwiseOrder.BA, v.ba)):
            if not verdict:
                continue
            left = v.generator_a if order == PairwiseOrder.AB else v.generator_b
            outcome = _SHOWN_AS.get(verdict, verdict)
            records.append(Comparison(item, coder, v.generator_a, v.generator_b, left, outcome))
    return records


def pairwise_comparisons(
    judge: Judge,
    items: Mapping[Sequence[int], Hashable] | None = None,
    *,
    prompt_sha256: str | None = None,
) -> list[Comparison]:
    """A judge's pairwise verdicts as Comparison records for comparisons.py: every pair it judged, or only
    the pairs of `items` (pair, in either order -> the item key its records carry)."""
    keyed = None if items is None else {_pair_key(pair): item for pair, item in items.items()}
    verdicts = pairwise_verdicts(judge, keyed, prompt_sha256=prompt_sha256)
    return comparisons_of(verdicts, coder=judge.judge_id, items=keyed)
