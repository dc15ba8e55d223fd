"""The human-calibrated score with adjudicated gold (#23): where a counted item has gold, its human label is
the gold (a flipped majority, a settled tie), counted as n_gold; an item still collecting stays pending even
with gold. The labels equal a hand computation with gold and differ from the one without; the report card's
bias against people follows, and the pages and the API show n_gold."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import StudyItem
from annotation.kinds.critical_failures.calibration.calibrated import calibrated_lines
from annotation.kinds.critical_failures.gold_events import gold_decide
from annotation.kinds.critical_failures.report_card import CalibrationBias, calibration_bias
from h2e_site.stats import wilson_interval
from h2e_site.stats.calibration import calibrated_score
from h2e_site.stats.sampling import uniform_probabilities
from tests.annotation.calibration_world import (
    FAIL,
    PASS,
    annotate_votes,
    calibration_study,
    frame_of,
    judge_verdicts,
    pks,
)
from tests.annotation.test_calibration_join import assert_same
from tests.factories import make_generator, make_judge, make_user

pytestmark = pytest.mark.django_db

FAILURE = [{"description": "Skips the rinse", "l1_steps": [1], "l2_steps": [1]}]


@pytest.fixture
def world() -> dict[str, Any]:
    """Six examples of one generator, five drawn uniformly (k = 2); example 4 is still collecting (3
    annotations wanted, 2 in); example 5 is not drawn. The judge: f = 0, 1, 0, 1, 1, 0 (1 = no failure)."""
    judge, generator = make_judge(model="org/calibrated-judge"), make_generator(model="model-g")
    frame = frame_of(generator, ["Health"] * 6)
    study = calibration_study("cal-gold", frame, uniform_probabilities(pks(frame), 5), frame[:5], k=2)
    StudyItem.objects.filter(study=study, generation=frame[4]).update(target_annotations=3)
    annotate_votes(
        study,
        {
            frame[0].pk: [PASS, FAIL],  # a tie: Y = 0.5
            frame[1].pk: [PASS, PASS],  # Y = 1
            frame[2].pk: [FAIL, FAIL],  # Y = 0
            frame[3].pk: [PASS, PASS],  # Y = 1
            frame[4].pk: [FAIL, FAIL],  # 2 of 3 annotations: pending
        },
    )
    judge_verdicts(judge, dict(zip(frame, [FAIL, PASS, FAIL, PASS, PASS, FAIL], strict=True)))
    return {"judge": judge, "study": study, "frame": frame}


def decide(world: dict[str, Any], index: int, has_failure: bool | None) -> None:
    item = StudyItem.objects.get(study=world["study"], generation=world["frame"][index])
    gold = (
        None
        if has_failure is None
        else {"has_failure": has_failure, "failures": FAILURE if has_failure else []}
    )
    gold_decide(item=item, verdict=gold, reason="Adjudicated.", user=make_user(is_staff=True))


def adjudicate(world: dict[str, Any]) -> None:
    decide(world, 0, False)  # settles the tie: no failure, Y = 1
    decide(world, 1, True)  # flips the majority: a failure, Y = 0
    decide(world, 3, True)  # set, then cleared: the majority stays, Y = 1
    decide(world, 3, None)
    decide(world, 4, False)  # pending: stays pending


JUDGE_ALL = [0, 1, 0, 1, 1, 0]
JUDGE_LABELLED = [0, 1, 0, 1]  # examples 0-3


def test_without_gold_the_labels_are_the_majorities(world: dict[str, Any]) -> None:
    (line,) = calibrated_lines()
    assert [e.human for e in line.examples] == [0.5, 1.0, 0.0, 1.0, None, None]
    assert_same(line.overall, calibrated_score([0.5, 1, 0, 1], JUDGE_LABELLED, JUDGE_ALL))
    assert line.overall.human_only == pytest.approx(2.5 / 4)  # (0.5 + 1 + 0 + 1) / 4
    assert (line.n_gold, line.n_ties, line.n_pending) == (0, 1, 1)


def test_gold_replaces_the_majority_on_the_complete_items(world: dict[str, Any]) -> None:
    adjudicate(world)
    (line,) = calibrated_lines()
    # Example 0: tie -> gold 1; 1: majority 1 -> gold 0; 2: majority 0; 3: gold cleared, majority 1;
    # 4: pending even with gold; 5: not drawn.
    assert [e.human for e in line.examples] == [1.0, 0.0, 0.0, 1.0, None, None]
    assert [e.gold for e in line.examples] == [True, True, False, False, False, False]
    assert_same(line.overall, calibrated_score([1, 0, 0, 1], JUDGE_LABELLED, JUDGE_ALL))
    assert line.overall.human_only == pytest.approx(2 / 4)  # (1 + 0 + 0 + 1) / 4, not 2.5 / 4
    assert (line.overall.human_low, line.overall.human_high) == pytest.approx(wilson_interval(2, 4))
    assert (line.overall.n, line.overall.N) == (4, 6)
    assert (line.n_gold, line.n_ties, line.n_pending) == (2, 0, 1)
    assert line.as_json()["n_gold"] == 2


def test_the_report_cards_bias_follows_the_gold(world: dict[str, Any]) -> None:
    before = calibration_bias(world["judge"])
    assert isinstance(before, CalibrationBias)
    # f - Y on examples 0-3: (0 - 0.5) + (1 - 1) + (0 - 0) + (1 - 1) = -0.5, over 4.
    assert before.bias.overall.estimate == pytest.approx(-0.125)
    assert before.bias.n_ties == 1
    adjudicate(world)
    after = calibration_bias(world["judge"])
    assert isinstance(after, CalibrationBias)
    # (0 - 1) + (1 - 0) + (0 - 0) + (1 - 1) = 0. Missed: Y = 0 on 1 and 2, the judge passes 1 -> 1 of 2;
    # false alarms: Y = 1 on 0 and 3, the judge fails 0 -> 1 of 2.
    assert after.bias.overall.estimate == pytest.approx(0.0)
    assert after.bias.n_ties == 0
    assert (after.bias.missed.k, after.bias.missed.n) == (1, 2)
    assert (after.bias.false_alarms.k, after.bias.false_alarms.n) == (1, 2)


def test_the_pages_and_the_api_show_n_gold(staff: Client, world: dict[str, Any]) -> None:
    adjudicate(world)
    judge = world["judge"].judge_id
    html = staff.get(reverse("calibrated:leaderboard") + f"?judge={judge}").content.decode()
    assert "1 pending · 0 ties · 2 gold · 0 imputed" in html
    page = staff.get(
        reverse("calibrated:generator", args=[world["frame"][0].generator.generator_id]) + f"?judge={judge}"
    )
    assert "2 labelled by adjudicated gold" in page.content.decode()
    body = staff.get(f"/api/leaderboard/calibrated/?judge={judge}").json()
    (line,) = body["lines"]
    assert (line["n_gold"], line["n_ties"], line["n_pending"]) == (2, 0, 1)
