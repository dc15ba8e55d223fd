"""The synthetic demo world's procedures, generators and judges, and what each wrote: L1s (bench procedures),
L2s with a latent truth (a planted critical failure or none) and two judges' verdicts, stored through the
services every LLM run uses (judging/results.py: generations_store, judgments_store), whose parsers read the
generated text as they read a model's."""

from __future__ import annotations

import random
from dataclasses import dataclass

from demo.world import texts
from h2e_site.llm.base import LLMResult
from h2e_site.synthetic import SYNTHETIC_ID_PREFIX, SYNTHETIC_MODEL_PREFIX
from judging.metrics import count_tokens
from judging.models import Generation, Generator, Judge, PairwiseJudgment, PairwiseOrder
from judging.pairwise_prompt import pairwise_template_sha256, parse_pairwise_verdict
from judging.results import generations_store, judgments_store
from mining.models import Procedure, Split, Topic

N_PROCEDURES = 300


@dataclass(frozen=True)
class GeneratorProfile:
    """A synthetic generator: how often its L2 has a critical failure (before the topic's effect)."""

    name: str
    failure_rate: float


@dataclass(frozen=True)
class JudgeProfile:
    """A synthetic judge: the share of real failures it finds (per generator where it differs), the share of
    clean L2s it flags, and the share of answers it writes unparsable."""

    name: str
    sensitivity: float
    false_alarm_rate: float
    parse_failure_rate: float
    sensitivity_by_generator: tuple[tuple[str, float], ...] = ()

    def sensitivity_on(self, generator: str) -> float:
        return dict(self.sensitivity_by_generator).get(generator, self.sensitivity)


# birch and cedar are close, and the lenient judge misses cedar's failures: the two judges rank them apart.
GENERATORS = (
    GeneratorProfile("atlas-70b", 0.14),
    GeneratorProfile("birch-32b", 0.24),
    GeneratorProfile("cedar-8b", 0.33),
    GeneratorProfile("dune-1b", 0.52),
)
JUDGES = (
    JudgeProfile("judge-strict", sensitivity=0.92, false_alarm_rate=0.12, parse_failure_rate=0.0),
    JudgeProfile(
        "judge-lenient",
        sensitivity=0.74,
        false_alarm_rate=0.04,
        parse_failure_rate=0.015,
        sensitivity_by_generator=(("cedar-8b", 0.35),),
    ),
)


@dataclass
class Truth:
    """What the world knows and the database does not say: each generation's planted failure (None: its L2
    is sound), and each procedure's topic."""

    failures: dict[int, texts.PlantedFailure | None]


def procedures_create(rng: random.Random) -> list[Procedure]:
    """N_PROCEDURES bench procedures spread over the 14 topics (ids "synthetic-demo-0001", ...)."""
    topics = [Topic.objects.get_or_create(name=name)[0] for name in texts.TOPICS]
    used: set[str] = set(Procedure.objects.values_list("goal", flat=True))
    rows = []
    for n in range(1, N_PROCEDURES + 1):
        topic = topics[(n - 1) % len(topics)]
        text = texts.procedure_text(rng, topic.name, used)
        rows.append(
            Procedure(
                source_example_id=f"{SYNTHETIC_ID_PREFIX}{n:04d}",
                topic=topic,
                goal=text.goal,
                resources=text.resources,
                steps=text.steps,
                split=Split.BENCH,
                n_tokens=count_tokens(text.steps),  # as compute_metrics fills it
            )
        )
    return Procedure.objects.bulk_create(rows)


def topic_effects(rng: random.Random) -> dict[str, float]:
    """How much harder (> 1) or easier each topic makes a critical failure."""
    return {topic: rng.uniform(0.55, 1.5) for topic in texts.TOPICS}


def generations_create(rng: random.Random, procedures: list[Procedure]) -> tuple[list[Generator], Truth]:
    """Every synthetic generator's L2 on every procedure, each failing with the generator's rate times the
    topic's effect (plus a generator-by-topic wobble, so the by-topic figures differ)."""
    effects = topic_effects(rng)
    generators, failures = [], {}
    for profile in GENERATORS:
        generator = Generator.objects.create(
            generator_id=f"{SYNTHETIC_ID_PREFIX}{profile.name}",
            model=f"{SYNTHETIC_MODEL_PREFIX}{profile.name}",
            backend="synthetic",
            manifest={"synthetic": True, "note": "written by manage.py demo_setup: not a model's output"},
        )
        generators.append(generator)
        results, planted = [], []
        for procedure in procedures:
            assert procedure.topic is not None
            rate = profile.failure_rate * effects[procedure.topic.name] * rng.uniform(0.75, 1.25)
            l2 = texts.l2_text(rng, procedure.steps, fails=rng.random() < min(rate, 0.9))
            key = str(procedure.pk)
            results.append((procedure, "", LLMResult(key=key, text=texts.completion_text(l2.steps))))
            planted.append(l2.failure)
        stored = generations_store(generator=generator, results=results)
        failures.update({row.pk: failure for row, failure in zip(stored, planted, strict=True)})
    return generators, Truth(failures)


def judgments_create(rng: random.Random, generators: list[Generator], truth: Truth) -> list[Judge]:
    """Each synthetic judge's verdict on every synthetic L2: the planted failure found with the judge's
    sensitivity, a false alarm on a sound L2 with its false-alarm rate, a few answers unparsable."""
    generations = list(
        Generation.objects.filter(generator__in=generators)
        .select_related("procedure", "generator")
        .order_by("pk")
    )
    judges = []
    for profile in JUDGES:
        judge = Judge.objects.create(
            judge_id=f"{SYNTHETIC_ID_PREFIX}{profile.name}",
            model=f"{SYNTHETIC_MODEL_PREFIX}{profile.name}",
            backend="synthetic",
            manifest={"synthetic": True, "note": "written by manage.py demo_setup: not a model's output"},
        )
        judges.append(judge)
        name_of = {g.pk: g.generator_id.removeprefix(SYNTHETIC_ID_PREFIX) for g in generators}
        results = [
            (
                row,
                LLMResult(
                    key=str(row.pk), text=_verdict(rng, profile, name_of[row.generator_id], row, truth)
                ),
            )
            for row in generations
        ]
        judgments_store(judge=judge, results=results)
    return judges


def _verdict(
    rng: random.Random, profile: JudgeProfile, generator: str, generation: Generation, truth: Truth
) -> str:
    if rng.random() < profile.parse_failure_rate:
        return "The L2 looks mostly fine but I am not sure"  # no JSON: a parse failure, as real judges do
    planted = truth.failures[generation.pk]
    found: list[texts.PlantedFailure] = []
    if planted is not None and rng.random() < profile.sensitivity_on(generator):
        found.append(planted)
    elif planted is None and rng.random() < profile.false_alarm_rate:
        found.append(texts.false_alarm(rng, len(generation.predicted_steps)))
    reasoning = "I compared every L2 step with L1. " + (
        "; ".join(f.description for f in found) or "No step blocks the goal."
    )
    return texts.judge_output(found, reasoning=reasoning)


# The answer's last line names the verdict as shown: 1 (the first L2 shown has fewer failures), 2, or a tie.
SHOWN_VERDICTS = {(0, 1): "1", (1, 0): "2", (0, 0): "both_none", (1, 1): "both_fail"}


def pairwise_judgments_create(
    rng: random.Random, pairs: list[tuple[Generation, Generation]], judges: list[Judge], truth: Truth
) -> int:
    """Each synthetic judge's pairwise verdict on each pair in both orders (the LLM twin of a pairwise
    study): each L2 seen as the judge sees it pointwise, afresh in each order (so some verdicts flip with the
    order), and a tie of two sound L2s now and then broken for the one shown first (a position bias). The
    answers are read by the pairwise parser (judging/pairwise_prompt.py). How many verdicts were written."""
    sha = pairwise_template_sha256()
    profiles = {f"{SYNTHETIC_ID_PREFIX}{p.name}": p for p in JUDGES}
    rows = []
    for judge in judges:
        profile = profiles[judge.judge_id]
        for a, b in pairs:
            for order in PairwiseOrder.values:
                first, second = (a, b) if order == PairwiseOrder.AB else (b, a)
                seen = (_sees_failure(rng, profile, first, truth), _sees_failure(rng, profile, second, truth))
                if seen == (0, 0) and rng.random() < 0.1:
                    seen = (0, 1)
                answer = f"I read both L2s against L1.\nVerdict: {SHOWN_VERDICTS[seen]}"
                parsed = parse_pairwise_verdict(answer)
                rows.append(
                    PairwiseJudgment(judge=judge, generation_a=a, generation_b=b, order=order,
                                     verdict=parsed.verdict, raw_output=answer, prompt_sha256=sha, attempts=1)
                )  # fmt: skip
    return len(PairwiseJudgment.objects.bulk_create(rows))


def _sees_failure(rng: random.Random, profile: JudgeProfile, generation: Generation, truth: Truth) -> int:
    generator = generation.generator.generator_id.removeprefix(SYNTHETIC_ID_PREFIX)
    if truth.failures[generation.pk] is not None:
        return int(rng.random() < profile.sensitivity_on(generator))
    return int(rng.random() < profile.false_alarm_rate)
