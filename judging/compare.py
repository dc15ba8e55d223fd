"""Two generators under one judge, example by example: the discordant examples behind their paired test
(judging/paired.py) and, for one example, both L2s against the same L1 with both judgments."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch

from mining.models import Procedure

from . import paired
from .models import CriticalFailure, Generation, Generator, Judge, Judgment


@dataclass(frozen=True)
class Discordant:
    """An example that exactly one of the two generators passes (no critical failure) under the judge."""

    procedure_pk: int
    a_passes: bool


@dataclass(frozen=True)
class Comparison:
    judge: Judge
    generator_a: Generator
    generator_b: Generator
    test: paired.PairedTest | None  # None when they share no scored example
    discordant: list[Discordant]


def _verdicts(judge: Judge, generator: Generator) -> dict[int, bool]:
    """procedure pk -> passed, over the generator's scored judgments by the judge."""
    rows = Judgment.objects.filter(judge=judge, generator=generator, parse_failed=False).values_list(
        "procedure_id", "has_failure"
    )
    return {procedure_pk: not has_failure for procedure_pk, has_failure in rows}


def comparison(judge: Judge, generator_a: Generator, generator_b: Generator) -> Comparison:
    """The paired test of A vs B (Holm-adjusted with the judge's other pairs) and their discordant examples,
    by procedure pk."""
    verdicts_a, verdicts_b = _verdicts(judge, generator_a), _verdicts(judge, generator_b)
    discordant = [
        Discordant(pk, verdicts_a[pk])
        for pk in sorted(verdicts_a.keys() & verdicts_b.keys())
        if verdicts_a[pk] != verdicts_b[pk]
    ]
    pairs = paired.paired_tests([judge.judge_id]).get(judge.judge_id)
    test = pairs.between(generator_a.generator_id, generator_b.generator_id) if pairs else None
    if test is not None and test.generator_a != generator_a.generator_id:  # shown from A's side
        test = paired.PairedTest(
            test.judge_id,
            test.generator_b,
            test.generator_a,
            test.n_shared,
            test.b_only,
            test.a_only,
            test.p_value,
            test.p_holm,
        )
    return Comparison(judge, generator_a, generator_b, test, discordant)


@dataclass(frozen=True)
class Side:
    generator: Generator
    generation: Generation | None
    judgment: Judgment | None


def side_by_side(
    judge: Judge, generators: tuple[Generator, Generator], procedure: Procedure
) -> tuple[Side, Side]:
    """Each generator's L2 of the procedure and the judge's judgment of it (failures prefetched)."""
    generations = {
        g.generator_id: g
        for g in Generation.objects.filter(procedure=procedure, generator__in=generators).prefetch_related(
            Prefetch(
                "judgments",
                queryset=Judgment.objects.filter(judge=judge).prefetch_related(
                    Prefetch("failures", queryset=CriticalFailure.objects.order_by("order"))
                ),
            )
        )
    }

    def side(generator: Generator) -> Side:
        generation = generations.get(generator.pk)
        judgment = next(iter(generation.judgments.all()), None) if generation else None
        return Side(generator, generation, judgment)

    return side(generators[0]), side(generators[1])


__all__ = ["Comparison", "Discordant", "Side", "comparison", "side_by_side"]
