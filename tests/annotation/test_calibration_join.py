"""The join of judge verdicts and human majorities into the calibrated How2Score
(annotation/kinds/critical_failures/calibration/calibrated.py),
on small worlds annotated through the real services: each figure equals h2e_site.stats.calibration's
estimator on the labels the module docstring's rules give, listed here by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from annotation.flow import services
from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration.calibrated import (
    OTHER_TOPICS,
    CalibratedLine,
    calibrated_lines,
    unused_studies,
)
from annotation.kinds.critical_failures.models import CalibrationDraw, CalibrationRound
from h2e_site.stats import wilson_interval
from h2e_site.stats.calibration import (
    MIN_DESIGN_STRATUM_LABELS,
    StratumLabels,
    calibrated_score,
    design_stratified_score,
    stratified_score,
)
from h2e_site.stats.sampling import inclusion_after_rounds, uniform_probabilities
from judging.models import Generation
from tests.annotation.calibration_world import (
    FAIL,
    PASS,
    annotate_votes,
    calibration_study,
    frame_of,
    judge_verdicts,
    pks,
    small_world,
)
from tests.annotation.conftest import make_study
from tests.factories import make_generator, make_judge

pytestmark = pytest.mark.django_db


def line_of(lines: list[CalibratedLine], model: str) -> CalibratedLine:
    (line,) = [line for line in lines if line.generator_model == model]
    return line


def assert_same(actual: object, expected: object) -> None:
    """Two CalibratedScores (or StratifiedScores) equal field by field, floats to 1e-12."""
    for name in ("estimate", "ci_low", "ci_high", "std_error", "lam", "effective_n", "human_only"):
        if hasattr(expected, name):
            assert getattr(actual, name) == pytest.approx(getattr(expected, name), abs=1e-12), name
    for name in ("n", "N", "weighted", "undefined"):
        if hasattr(expected, name):
            assert getattr(actual, name) == getattr(expected, name), name


@pytest.fixture
def world() -> dict[str, object]:
    return small_world()


def test_the_calibrated_score_is_the_estimator_on_the_majorities_with_imputed_judge_labels(
    world: dict[str, object],
) -> None:
    line = line_of(calibrated_lines(), "model-a")
    expected = calibrated_score([1, 1, 0, 1], [1, 0, 0, 0.5], [1, 0, 0, 0.5, 1, 1, 0.5, 0])
    assert_same(line.overall, expected)
    assert (line.overall.n, line.overall.N, line.overall.weighted) == (4, 8, False)
    assert (line.n_pending, line.n_imputed, line.n_ties) == (1, 2, 0)
    assert line.study_slug == "cal-a"
    assert (line.overall.human_low, line.overall.human_high) == pytest.approx(wilson_interval(3, 4))
    # Judge-only: the leaderboard's score, 3 of its 6 scored examples, with the Wilson interval.
    assert line.judge_only == pytest.approx(0.5)
    assert (line.judge_low, line.judge_high) == pytest.approx(wilson_interval(3, 6))
    assert line.judge_n == 6


def test_unequal_probabilities_weight_the_labelled_items(world: dict[str, object]) -> None:
    line = line_of(calibrated_lines(), "model-b")
    # Health: 2 of 2 drawn (pi = 1); Religion: 2 of 6 (pi = 1/3), equal allocation of 4.
    expected = calibrated_score(
        [1, 0, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0, 1, 0, 1, 1], inclusion_probabilities=[1, 1, 1 / 3, 1 / 3]
    )
    assert line.overall.weighted
    assert_same(line.overall, expected)
    # The weighted human-only score is the Hajek mean: (1 + 0 + 3 + 0) / (1 + 1 + 3 + 3) = 0.5.
    assert line.overall.human_only == pytest.approx(0.5)


def test_a_generator_never_sampled_has_its_reason(world: dict[str, object]) -> None:
    line = line_of(calibrated_lines(), "model-c")
    assert line.overall.estimate is None
    assert line.reason == "no calibration sample has drawn this generator's examples"
    assert line.judge_only == pytest.approx(1.0)


def test_lines_follow_the_judge_asked_for(world: dict[str, object]) -> None:
    other = make_judge(model="judge-z")
    assert calibrated_lines(judge_ids=[other.judge_id]) == []
    assert {line.generator_model for line in calibrated_lines(judge_ids=[world["judge"].judge_id])} == {  # type: ignore[attr-defined]
        "model-a",
        "model-b",
        "model-c",
    }


def test_a_tied_majority_counts_half() -> None:
    judge, generator = make_judge(), make_generator(model="model-t")
    frame = frame_of(generator, ["Health"] * 4)
    study = calibration_study("cal-tie", frame, uniform_probabilities(pks(frame), 3), frame[:3], k=2)
    annotate_votes(study, {frame[0].pk: [PASS, FAIL], frame[1].pk: [PASS, PASS], frame[2].pk: [FAIL, FAIL]})
    judge_verdicts(judge, dict(zip(frame, [FAIL, PASS, FAIL, PASS], strict=True)))
    (line,) = calibrated_lines()
    assert line.n_ties == 1
    assert_same(line.overall, calibrated_score([0.5, 1, 0], [0, 1, 0], [0, 1, 0, 1]))
    assert (line.overall.human_low, line.overall.human_high) == pytest.approx(wilson_interval(1.5, 3))


def test_the_study_with_more_labelled_items_of_a_generator_is_used(world: dict[str, object]) -> None:
    frame_a: list[Generation] = world["frame_a"]  # type: ignore[assignment]
    newer = calibration_study("cal-a-newer", frame_a, uniform_probabilities(pks(frame_a), 2), frame_a[5:7])
    annotate_votes(newer, {frame_a[5].pk: [PASS] * 3, frame_a[6].pk: [FAIL] * 3})
    assert line_of(calibrated_lines(), "model-a").study_slug == "cal-a"  # 4 labelled items against 2
    (unused,) = unused_studies()
    assert unused.slug == "cal-a-newer"
    assert unused.reason == calibration.OUTNUMBERED


def test_rounds_combine_into_one_inclusion_probability(world: dict[str, object]) -> None:
    """A second round over the same frame: pi_i = 1 - (1 - pi_i1)(1 - pi_i2) for every example, and the
    labelled items' probabilities now differ, so they are weighted."""
    study, frame_a = world["study_a"], world["frame_a"]
    assert isinstance(frame_a, list)
    second = CalibrationRound.objects.create(study=study, number=2, design="disagreement", size=3, seed=2)
    CalibrationDraw.objects.bulk_create(
        CalibrationDraw(round=second, generation=g, probability=0.25 if i < 2 else 0.5)
        for i, g in enumerate(frame_a)
    )
    p1, p2 = inclusion_after_rounds([5 / 8, 0.25]), inclusion_after_rounds([5 / 8, 0.5])
    sample = calibration.generator_samples()[frame_a[0].generator_id]
    assert [e.probability for e in sample.examples] == pytest.approx([p1] * 2 + [p2] * 6)
    line = line_of(calibrated_lines(), "model-a")
    assert line.overall.weighted
    expected = calibrated_score(
        [1, 1, 0, 1], [1, 0, 0, 0.5], [1, 0, 0, 0.5, 1, 1, 0.5, 0], inclusion_probabilities=[p1, p1, p2, p2]
    )
    assert_same(line.overall, expected)


def test_per_topic_rule_and_stratified_pooling() -> None:
    """Cooking: 11 labelled items (>= MIN_TOPIC_LABELS): its own estimate and its own stratum; Health (2) and
    Religion (1) have the rule's reason and are pooled into "other topics"."""
    assert calibration.MIN_TOPIC_LABELS == 10
    judge, generator = make_judge(), make_generator(model="model-p")
    frame = frame_of(generator, ["Cooking"] * 12 + ["Health"] * 2 + ["Religion"] * 2)
    cooking, health, religion = frame[:12], frame[12:14], frame[14:]
    drawn = [*cooking[:11], *health, religion[0]]
    study = calibration_study("cal-topics", frame, uniform_probabilities(pks(frame), 14), drawn, k=1)
    cooking_y = [0 if i in {1, 4, 7} else 1 for i in range(11)]
    votes = {g.pk: [not y] for g, y in zip(cooking, cooking_y, strict=False)}
    votes |= {health[0].pk: [PASS], health[1].pk: [FAIL], religion[0].pk: [PASS]}
    annotate_votes(study, votes)
    cooking_f = [0 if i in {1, 4, 9, 11} else 1 for i in range(12)]
    judge_verdicts(judge, {g: not f for g, f in zip(cooking, cooking_f, strict=True)})
    judge_verdicts(judge, {health[0]: PASS, health[1]: PASS, religion[0]: FAIL, religion[1]: PASS})
    (line,) = calibrated_lines()
    topics = {t.topic: t for t in line.topics}
    assert list(topics) == ["Cooking", "Health", "Religion"]
    assert_same(topics["Cooking"].score, calibrated_score(cooking_y, cooking_f[:11], cooking_f))
    assert (topics["Health"].score, topics["Health"].n_labelled, topics["Health"].n_examples) == (None, 2, 2)
    assert topics["Health"].reason == "2 human label(s) in this topic; a topic's own estimate needs 10"
    assert topics["Religion"].reason.startswith("1 human label(s)")
    expected = stratified_score(
        {
            "Cooking": StratumLabels(cooking_y, cooking_f[:11], cooking_f),
            OTHER_TOPICS: StratumLabels([1, 0, 1], [1, 1, 0], [1, 1, 0, 1]),
        }
    )
    assert line.stratified is not None
    assert sorted(line.stratified.strata) == ["Cooking", OTHER_TOPICS]
    assert_same(line.stratified, expected)
    assert_same(line.overall, calibrated_score([*cooking_y, 1, 0, 1], [*cooking_f[:11], 1, 1, 0],
                                               [*cooking_f, 1, 1, 0, 1]))  # fmt: skip


def test_a_pool_with_fewer_than_two_labels_merges_into_the_largest_topic_stratum() -> None:
    """Cooking (12 examples, 11 labelled) and Food (10, all labelled) are strata; Health (2 examples, 1
    labelled) and Religion (2, none) pool into "other topics", which with 1 label has no estimate (before the
    rule the stratified estimate was undefined): it merges into Cooking, the larger stratum. Computed by hand:
    theta = 10/26 theta_Food + 16/26 theta_Cooking+pool, se^2 = (10/26)^2 se_Food^2 + (16/26)^2 se_C^2."""
    judge, generator = make_judge(), make_generator(model="model-pool")
    frame = frame_of(generator, ["Cooking"] * 12 + ["Food"] * 10 + ["Health"] * 2 + ["Religion"] * 2)
    cooking, food, health, religion = frame[:12], frame[12:22], frame[22:24], frame[24:]
    drawn = [*cooking[:11], *food, health[0]]
    study = calibration_study("cal-pool", frame, uniform_probabilities(pks(frame), 22), drawn, k=1)
    cooking_y = [0 if i in {1, 4, 7} else 1 for i in range(11)]
    food_y = [0 if i in {0, 5} else 1 for i in range(10)]
    votes = {g.pk: [not y] for g, y in zip(cooking, cooking_y, strict=False)}
    votes |= {g.pk: [not y] for g, y in zip(food, food_y, strict=True)} | {health[0].pk: [FAIL]}
    annotate_votes(study, votes)
    cooking_f = [0 if i in {1, 4, 9, 11} else 1 for i in range(12)]
    food_f = [0 if i in {0, 3} else 1 for i in range(10)]
    judge_verdicts(judge, {g: not f for g, f in zip(cooking, cooking_f, strict=True)})
    judge_verdicts(judge, {g: not f for g, f in zip(food, food_f, strict=True)})
    judge_verdicts(judge, {health[0]: FAIL, health[1]: PASS, religion[0]: PASS, religion[1]: FAIL})
    (line,) = calibrated_lines()
    merged = f"Cooking + {OTHER_TOPICS}"
    assert line.stratified is not None and sorted(line.stratified.strata) == [merged, "Food"]
    food_score = calibrated_score(food_y, food_f, food_f)
    cooking_score = calibrated_score([*cooking_y, 0], [*cooking_f[:11], 0], [*cooking_f, 0, 1, 1, 0])
    assert food_score.std_error is not None and cooking_score.std_error is not None
    estimate = 10 / 26 * (food_score.estimate or 0) + 16 / 26 * (cooking_score.estimate or 0)
    se = ((10 / 26 * food_score.std_error) ** 2 + (16 / 26 * cooking_score.std_error) ** 2) ** 0.5
    assert line.stratified.estimate == pytest.approx(estimate, abs=1e-12)
    assert line.stratified.std_error == pytest.approx(se, abs=1e-12)
    assert line.stratified.ci_low == pytest.approx(estimate - 1.959963984540054 * se, abs=1e-9)
    assert (line.stratified.n, line.stratified.N, line.stratified.undefined) == (22, 26, "")
    # The rule on its own: a pool of 2 labels stays a stratum; no topic stratum: the pool is everything.
    examples = line.examples
    assert sorted(calibration.topic_strata(examples)) == [merged, "Food"]
    relabelled = [replace(e, human=1.0) if e.topic == "Religion" else e for e in examples]
    assert sorted(calibration.topic_strata(relabelled)) == ["Cooking", "Food", OTHER_TOPICS]
    few = [e for e in examples if e.topic in {"Health", "Religion"}]
    assert list(calibration.topic_strata(few)) == [OTHER_TOPICS]


def test_studies_without_a_probability_sample_are_listed_with_their_reason() -> None:
    plain = make_study(n_items=2, slug="plain")
    judge_1, judge_2 = make_judge(model="j1"), make_judge(model="j2")
    generation = Generation.objects.filter(generator__model="model-under-test").first()
    assert generation is not None
    judge_verdicts(judge_1, {generation: FAIL})
    judge_verdicts(judge_2, {generation: PASS})
    disagreeing = services.study_create(
        title="Where judges disagree",
        slug="disagree",
        selection=services.Selection(disagreeing_judge_ids=[judge_1.pk, judge_2.pk]),
        attention_check_every=0,
    )
    reasons = {u.slug: u.reason for u in unused_studies()}
    assert set(reasons) == {plain.slug, disagreeing.slug}
    assert reasons["disagree"].startswith(
        f"its selection keeps only the examples where judges {judge_1.pk}, "
    )
    assert "not a probability sample" in reasons["disagree"]
    assert "built without a calibration sample" in reasons["plain"]
    assert calibrated_lines() == [] or all(line.overall.estimate is None for line in calibrated_lines())


def _routed_examples(labelled_per_level: tuple[int, int]) -> list[calibration.Example]:
    """A frame of 400 + 600 examples drawn with pi = 0.2 (where judges disagree) and 0.05 (elsewhere),
    the given numbers of them labelled; labels alternate so that no stratum is constant."""
    examples = []
    for level, (size, labelled, probability) in enumerate(
        [(400, labelled_per_level[0], 0.2), (600, labelled_per_level[1], 0.05)]
    ):
        for i in range(size):
            human = float(i % 3 != 0) if i < labelled else None
            judge = float(i % 4 != 0) if level else float(i % 2 == 0)
            examples.append(calibration.Example(level * 1000 + i, "Health", probability, judge, human))
    return examples


def test_a_routed_sample_is_estimated_over_its_design_strata_when_each_has_enough_labels() -> None:
    examples = _routed_examples((80, 30))
    score = calibration.score_of(examples)
    strata = [
        (StratumLabels([e.human for e in group if e.human is not None],
                       [e.judge for e in group if e.human is not None],
                       [e.judge for e in group]), len(group))  # type: ignore[misc]
        for group in (examples[:400], examples[400:])
    ]  # fmt: skip
    expected = design_stratified_score(strata)
    assert expected is not None and score.design_strata == 2
    assert_same(score, expected)


def test_a_routed_sample_with_a_thin_design_stratum_is_weighted_by_inverse_probability() -> None:
    examples = _routed_examples((80, MIN_DESIGN_STRATUM_LABELS - 1))
    score = calibration.score_of(examples)
    labelled = [e for e in examples if e.human is not None]
    expected = calibrated_score(
        [e.human for e in labelled],  # type: ignore[misc]
        [e.judge for e in labelled],  # type: ignore[misc]
        [e.judge for e in examples],  # type: ignore[misc]
        inclusion_probabilities=[e.probability for e in labelled],
    )
    assert score.design_strata == 0 and score.weighted
    assert_same(score, expected)
