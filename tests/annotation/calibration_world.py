"""Calibration samples for tests, built the way the study builder builds them: a critical-failures study
(services.study_create) whose items are the drawn examples of a frame, a CalibrationRound and one
CalibrationDraw per frame example (its probability from h2e_site/stats/sampling.py), then annotated through
the real participant services."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from annotation.base.models import Study, StudyItem
from annotation.flow import services
from annotation.kinds.critical_failures.models import CalibrationDesign, CalibrationDraw, CalibrationRound
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from h2e_site.stats.sampling import stratified_probabilities, uniform_probabilities
from judging.models import Generation, Generator, Judge
from tests.annotation.conftest import annotate_all, qualified
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

FAIL = True  # a vote "has a critical failure"
PASS = False


def pks(generations: Sequence[Generation]) -> list[int]:
    return [g.pk for g in generations]


def frame_of(generator: Generator, topics: Sequence[str]) -> list[Generation]:
    """One generation of `generator` per entry of `topics` (its topic), in order."""
    return [
        make_generation(
            generator=generator,
            procedure=make_procedure(goal=f"Goal {i} of {generator.model}", topic=topic),
            predicted_steps=["Do the first thing.", "Do the second thing."],
        )
        for i, topic in enumerate(topics)
    ]


def calibration_study(
    slug: str,
    frame: Sequence[Generation],
    probabilities: Mapping[int, float],
    drawn: Sequence[Generation],
    *,
    k: int = 3,
    design: str = CalibrationDesign.UNIFORM,
) -> Study:
    """A study over the frame's generators whose items are `drawn`, with round 1's probabilities stored for
    every frame example."""
    generator_pks = sorted({g.generator_id for g in frame})
    study = services.study_create(
        title=f"Calibration {slug}",
        slug=slug,
        selection=services.Selection(generator_ids=generator_pks),
        annotators_per_item=k,
        attention_check_every=0,
        items_per_participant=0,
        min_dwell_seconds=0,
    )
    StudyItem.objects.filter(study=study).exclude(generation__in=[g.pk for g in drawn]).delete()
    rnd = CalibrationRound.objects.create(
        study=study, number=1, design=design, size=len(drawn), new_items=len(drawn), seed=1
    )
    drawn_pks = {g.pk for g in drawn}
    CalibrationDraw.objects.bulk_create(
        CalibrationDraw(round=rnd, generation=g, probability=probabilities[g.pk], drawn=g.pk in drawn_pks)
        for g in frame
    )
    return study


def annotate_votes(study: Study, votes: Mapping[int, Sequence[bool]]) -> None:
    """Participant n (1..k) gives votes[generation pk][n - 1] ("has a critical failure") on every item;
    every item of the study must have its votes."""
    k = max(len(v) for v in votes.values())
    for n in range(1, k + 1):

        def vote(assignment: Any, n: int = n) -> Submission:
            has_failure = votes[assignment.item.generation_id][n - 1]
            failures = [FailureInput("Skips a step", [1], [1])] if has_failure else []
            return Submission(has_failure, failures, user_agent="test", active_seconds=30.0)

        annotate_all(qualified(study, 7000 + study.pk * 10 + n), vote)


def judge_verdicts(judge: Judge, verdicts: Mapping[Generation, bool | None]) -> None:
    """The judge's verdict per generation: True = has a critical failure, False = none, None = a parse
    failure (generations left out get no judgment)."""
    for generation, verdict in verdicts.items():
        failures = [("Wrong order", [1], [1])] if verdict else []
        make_judgment(judge=judge, generation=generation, failures=failures, parse_failed=verdict is None)


def small_world() -> dict[str, object]:
    """Generator A: a uniform sample of 5 of its 8 examples (one item still collecting), a judge parse
    failure and an example without a judgment. Generator B: a sample stratified by topic (Health 2 of 2,
    Religion 2 of 6: unequal probabilities). Generator C: judged, never sampled."""
    judge = make_judge(model="org/how2judge")
    a, b, c = (make_generator(model=m) for m in ("model-a", "model-b", "model-c"))
    frame_a = frame_of(a, ["Health"] * 8)
    study_a = calibration_study("cal-a", frame_a, uniform_probabilities(pks(frame_a), 5), frame_a[:5], k=3)
    StudyItem.objects.filter(study=study_a, generation=frame_a[4]).update(target_annotations=4)
    annotate_votes(
        study_a,
        {
            frame_a[0].pk: [PASS, PASS, FAIL],  # majority: no failure, Y = 1
            frame_a[1].pk: [PASS, PASS, PASS],  # Y = 1
            frame_a[2].pk: [FAIL, FAIL, PASS],  # Y = 0
            frame_a[3].pk: [PASS, FAIL, PASS],  # Y = 1
            frame_a[4].pk: [FAIL, FAIL, FAIL],  # 3 of 4 annotations: pending
        },
    )
    # f: 1, 0, 0, parse failure, 1, 1, no judgment, 0 -> parsed score 3 / 6 = 0.5 imputed twice.
    judge_verdicts(judge, dict(zip(frame_a, [PASS, FAIL, FAIL, None, PASS, PASS], strict=False)))
    judge_verdicts(judge, {frame_a[7]: FAIL})
    frame_b = frame_of(b, ["Health"] * 2 + ["Religion"] * 6)
    topics = {g.pk: g.procedure.topic.name for g in frame_b}
    drawn_b = frame_b[:4]
    study_b = calibration_study(
        "cal-b", frame_b, stratified_probabilities(topics, 4), drawn_b, design=CalibrationDesign.STRATIFIED
    )
    annotate_votes(
        study_b,
        {
            frame_b[0].pk: [PASS] * 3,
            frame_b[1].pk: [FAIL] * 3,
            frame_b[2].pk: [PASS, PASS, FAIL],
            frame_b[3].pk: [FAIL, FAIL, PASS],
        },
    )
    judge_verdicts(judge, dict(zip(frame_b, [PASS, PASS, PASS, FAIL, PASS, FAIL, PASS, PASS], strict=True)))
    judge_verdicts(judge, {g: PASS for g in frame_of(c, ["Health"] * 3)})
    return {"judge": judge, "study_a": study_a, "study_b": study_b, "frame_a": frame_a}


REAL_GENERATORS = {  # model: (human share of "no critical failure", judge's agreement with people)
    "gpt-4.1": (0.72, 0.85),
    "Qwen2.5-7B-Instruct": (0.55, 0.8),
    "Llama-3.1-8B-Instruct": (0.48, 0.78),
    "OLMo-2-1124-7B-Instruct": (0.4, 0.82),
}
REAL_TOPICS = ["Cooking"] * 14 + ["Health"] * 10 + ["Home & Hobbies"] * 8 + ["Religion"] * 4


def realistic_world(seed: int = 20) -> dict[str, object]:
    """Four generators x 36 examples over four topics, the paper's judge and a demo judge on all of them, one
    calibration study drawing 28 examples of each (uniform; k = 3, a few items still collecting), a plain
    study that cannot calibrate, and a generator the judges judged but no sample drew."""
    import random

    rng = random.Random(seed)
    judge = make_judge(model="how2everything/how2judge-8b")
    demo = make_judge(model="demo/echo-judge", is_demo=True)
    frames, truth = [], {}
    for model, (share, agreement) in REAL_GENERATORS.items():
        frame = frame_of(make_generator(model=model), REAL_TOPICS)
        frames.extend(frame)
        for g in frame:
            passes = rng.random() < share
            truth[g.pk] = passes
            judge_says_pass = passes if rng.random() < agreement else not passes
            verdict: bool | None = None if rng.random() < 0.03 else not judge_says_pass
            judge_verdicts(judge, {g: verdict})
            judge_verdicts(demo, {g: rng.random() < 0.3})
    drawn = [g for i in range(0, len(frames), len(REAL_TOPICS))
             for g in rng.sample(frames[i:i + len(REAL_TOPICS)], 28)]  # fmt: skip
    probabilities = {g.pk: 28 / len(REAL_TOPICS) for g in frames}
    study = calibration_study("calibration-2025-06", frames, probabilities, drawn, k=3)
    StudyItem.objects.filter(study=study, generation__in=[g.pk for g in drawn[:3]]).update(
        target_annotations=4
    )
    votes = {}
    for g in drawn:
        clear = rng.random() < 0.8
        majority = [not truth[g.pk]] * 3
        votes[g.pk] = majority if clear else [majority[0], majority[0], not majority[0]]
    annotate_votes(study, votes)
    unsampled = make_generator(model="Mistral-7B-Instruct-v0.3")
    judge_verdicts(judge, {g: rng.random() < 0.5 for g in frame_of(unsampled, REAL_TOPICS[:12])})
    plain = frame_of(make_generator(model="pilot-generator"), ["Cooking"] * 2)
    services.study_create(
        title="Pilot study",
        slug="pilot",
        selection=services.Selection(generator_ids=[plain[0].generator_id]),
        attention_check_every=0,
    )
    return {"judge": judge, "demo": demo, "study": study}
