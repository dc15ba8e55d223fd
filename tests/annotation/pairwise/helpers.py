"""A pairwise study over fresh generations: goals each with an L2 from every generator."""

from __future__ import annotations

from typing import Any

from annotation.base.models import Study
from annotation.flow import services
from annotation.kinds.pairwise.spec import KIND, PairFailure, PairSubmission
from judging.models import Generator
from tests.factories import make_generation, make_generator, make_procedure

L1 = ["Boil water.", "Pour it over the tea.", "Wait three minutes."]
STEPS = {
    "gen-a": ["Boil water.", "Pour it over the tea.", "Wait three minutes."],
    "gen-b": ["Pour cold water over the tea.", "Drink it."],
    "gen-c": ["Boil water.", "Add the tea.", "Wait.", "Remove the tea."],
}


def make_generators(names: tuple[str, ...] = ("gen-a", "gen-b", "gen-c")) -> list[Generator]:
    return [make_generator(model=f"model {name}", generator_id=name) for name in names]


def make_pairwise_study(
    *, n_goals: int = 2, k: int = 3, generators: list[Generator] | None = None, **settings: Any
) -> Study:
    """n_goals goals, each with an L2 of every generator (gen-a, gen-b, gen-c unless given): a study of every
    pair of generators on every goal (3 pairs a goal with three generators)."""
    generators = generators or make_generators()
    for i in range(n_goals):
        procedure = make_procedure(goal=f"Make tea, variant {i}", steps=L1, topic="Food")
        for generator in generators:
            make_generation(
                generator=generator, procedure=procedure, predicted_steps=STEPS[generator.generator_id]
            )
    settings.setdefault("attention_check_every", 0)
    attention_checks = settings.pop("attention_checks", 0)
    selection = services.Selection(
        generator_ids=[g.pk for g in generators],
        sample_size=settings.pop("sample_size", None),
        seed=settings.pop("seed", 0),
    )
    return services.study_create(
        title="Tea pairs",
        slug=settings.pop("slug", f"tea-{generators[0].pk}"),
        kind=KIND,
        selection=selection,
        attention_checks=attention_checks,
        annotators_per_item=k,
        min_dwell_seconds=0,
        completion_code="C0MPLETE",
        screenout_code="SCREEN0UT",
        **settings,
    )


def answer(
    verdict: str, failures: list[tuple[str, list[int]]] = (), *, left: str = "a", comments: str = ""
) -> PairSubmission:
    """A submission: the verdict as shown, each failure as (side, L2 steps of that side)."""
    return PairSubmission(
        verdict=verdict,
        left=left,
        failures=[
            PairFailure(i, side, f"failure {i}", set(), set(steps))
            for i, (side, steps) in enumerate(failures)
        ],
        comments=comments,
        user_agent="test",
    )
