"""The calibrated leaderboard page, its per-topic page and its API (issue #20 item 5): staff only, the same
judge selection as the leaderboard, the figures of
annotation/kinds/critical_failures/calibration/calibrated.py (bounds clipped to 0-100 % on
the page, raw in the API), the empty states with their true reason and the studies not used."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.kinds.critical_failures.calibration.calibrated import calibrated_lines
from tests.annotation.calibration_world import small_world
from tests.annotation.conftest import make_study
from tests.factories import make_generation, make_judge, make_judgment, make_user

pytestmark = pytest.mark.django_db
PAGE = "/leaderboard/calibrated/"
API = "/api/leaderboard/calibrated/"


@pytest.fixture
def world() -> dict[str, object]:
    return small_world()


def test_the_pages_are_for_staff(client: Client, world: dict[str, object]) -> None:
    assert reverse("calibrated:leaderboard") == PAGE
    for url in (PAGE, f"{PAGE}{world['frame_a'][0].generator.generator_id}/", API):  # type: ignore[index]
        assert client.get(url).status_code in {302, 403}
    make_user(username="annotator", password="pw")
    client.login(username="annotator", password="pw")
    assert client.get(PAGE).status_code == 403
    assert client.get(API).status_code == 403


def test_the_page_shows_each_line_with_its_bounds_clipped(
    admin_client: Client, world: dict[str, object]
) -> None:
    html = admin_client.get(PAGE).content.decode()
    line_a = next(line for line in calibrated_lines() if line.generator_model == "model-a")
    low, high = line_a.overall.ci_low, line_a.overall.ci_high
    assert low is not None and high is not None and high > 1  # the raw upper bound is above 100 %
    assert f"{100 * line_a.overall.estimate:.1f}%" in html  # type: ignore[operator]
    assert f"{100 * low:.1f}\u2013100.0" in html  # an en dash
    assert "clipped to 0-100 %" in html
    assert "no calibration sample has drawn this generator&#x27;s examples" in html  # model-c
    assert "1 pending · 0 ties · 2 imputed" in html
    assert 'href="/studies/cal-a/"' in html
    assert "Judged by <strong>org/how2judge</strong>" in html  # the default judge, as the leaderboard


def test_the_leaderboard_links_to_the_calibrated_view_and_back(
    admin_client: Client, world: dict[str, object]
) -> None:
    judge = world["judge"]
    html = admin_client.get("/").content.decode()
    assert f'href="{PAGE}?judge={judge.judge_id}">Calibrated</a>' in html  # type: ignore[attr-defined]
    page = admin_client.get(PAGE, {"judge": judge.judge_id}).content.decode()  # type: ignore[attr-defined]
    assert f'href="/?judge={judge.judge_id}">Judge-only</a>' in page  # type: ignore[attr-defined]


def test_the_judge_selection_follows_the_leaderboard(admin_client: Client, world: dict[str, object]) -> None:
    other = make_judge(model="other-judge")
    make_judgment(judge=other, generation=world["frame_a"][0])  # type: ignore[index]
    one = admin_client.get(PAGE, {"judge": other.judge_id}).content.decode()
    assert "model-a" in one and "model-b" not in one
    both = admin_client.get(PAGE, {"judge": "all"}).content.decode()
    assert "Several judges in one table" in both and "model-b" in both and "other-judge" in both
    unknown = admin_client.get(PAGE, {"judge": "<nobody>"}).content.decode()
    assert "No judge &lt;nobody&gt;" in unknown


def test_the_topic_page_lists_each_topic_or_the_rule(admin_client: Client, world: dict[str, object]) -> None:
    judge, generation = world["judge"], world["frame_a"][0]  # type: ignore[index]
    url = reverse("calibrated:generator", args=[generation.generator.generator_id])  # type: ignore[attr-defined]
    html = admin_client.get(url, {"judge": judge.judge_id}).content.decode()  # type: ignore[attr-defined]
    assert "Health" in html
    assert "4 human label(s) in this topic; a topic&#x27;s own estimate needs 10" in html
    assert admin_client.get(url, {"judge": "all"}).status_code == 404
    assert admin_client.get(reverse("calibrated:generator", args=["nope"])).status_code == 404


def test_without_judgments_the_page_says_so(admin_client: Client) -> None:
    html = admin_client.get(PAGE).content.decode()
    assert "No judgments yet" in html


def test_without_a_calibration_study_the_page_links_to_the_builder(admin_client: Client) -> None:
    make_judgment(judge=make_judge(model="org/how2judge"), generation=make_generation())
    make_study(n_items=2, slug="plain")
    html = admin_client.get(PAGE).content.decode()
    assert "No calibration study yet" in html
    assert 'href="/studies/new/"' in html
    assert "Studies not used for calibration" in html
    assert "built without a calibration sample" in html


def test_the_api_gives_the_raw_lines(admin_client: Client, world: dict[str, object]) -> None:
    response = admin_client.get(API)
    assert response.status_code == 200
    data = response.json()
    assert data["min_topic_labels"] == 10
    assert data["lines"] == [line.as_json() for line in calibrated_lines()]
    line_a = next(line for line in data["lines"] if line["generator_model"] == "model-a")
    assert line_a["calibrated"]["ci_high"] > 1  # not clipped
    assert (line_a["n_pending"], line_a["n_imputed"], line_a["study"]) == (1, 2, "cal-a")
    assert line_a["judge_only"]["n"] == 6
    assert data["unused_studies"] == []


def test_the_api_refuses_unknown_and_empty_judges(admin_client: Client, world: dict[str, object]) -> None:
    judge = world["judge"]
    one = admin_client.get(API, {"judge": judge.judge_id}).json()  # type: ignore[attr-defined]
    assert {line["judge_id"] for line in one["lines"]} == {judge.judge_id}  # type: ignore[attr-defined]
    missing = admin_client.get(API, {"judge": "ghost"})
    assert missing.status_code == 404
    assert "ghost" in missing.json()["detail"]
    assert admin_client.get(API, {"judge": ""}).status_code == 400


def test_the_report_card_shows_the_judges_bias_on_the_calibration_samples(
    admin_client: Client, world: dict[str, object]
) -> None:
    from annotation.kinds.critical_failures.report_card import calibration_bias
    from h2e_site.stats.calibration_bias import judge_bias, weighted_mean_difference

    judge = world["judge"]
    result = calibration_bias(judge)  # type: ignore[arg-type]
    assert not isinstance(result, str)
    # Labelled items with a verdict: A's items 0-2 (item 3 is a parse failure: left out) and B's 4 items.
    # A: (f, Y, pi) = (1, 1, 5/8), (0, 1, 5/8), (0, 0, 5/8);
    # B: (1, 1, 1), (1, 0, 1), (1, 1, 1/3), (0, 0, 1/3).
    f, y = [1, 0, 0, 1, 1, 1, 0], [1, 1, 0, 1, 0, 1, 0]
    pi = [5 / 8] * 3 + [1, 1, 1 / 3, 1 / 3]
    expected = judge_bias(f, y, inclusion_probabilities=pi)
    for name in ("estimate", "ci_low", "ci_high", "std_error"):  # the items' order differs: approx
        assert getattr(result.bias.overall, name) == pytest.approx(getattr(expected.overall, name)), name
    for part in ("missed", "false_alarms"):
        got, want = getattr(result.bias, part), getattr(expected, part)
        for name in ("rate", "ci_low", "ci_high", "contribution"):
            assert getattr(got, name) == pytest.approx(getattr(want, name)), (part, name)
    assert result.n_no_verdict == 1
    assert result.studies == ["cal-a", "cal-b"]
    assert (result.bias.missed.k, result.bias.missed.n) == (1, 3)  # B's item 1
    assert (result.bias.false_alarms.k, result.bias.false_alarms.n) == (1, 4)  # A's item 1
    (health, religion) = result.topics
    assert (health.topic, health.n, health.bias) == ("Health", 5, None)
    assert health.reason == "5 human label(s) in this topic; a topic's own estimate needs 10"
    assert religion.n == 2
    overall = weighted_mean_difference(f, y, inclusion_probabilities=pi)
    assert overall.estimate == pytest.approx(expected.overall.estimate)
    page = admin_client.get(reverse("judges:report_card", args=[judge.judge_id])).content.decode()  # type: ignore[attr-defined]
    assert "Bias against people" in page
    assert f"{expected.overall.estimate:.3f}" in page
    api = admin_client.get(f"/api/judges/{judge.judge_id}/report-card/").json()  # type: ignore[attr-defined]
    assert api["calibration_bias"]["bias"]["estimate"] == pytest.approx(expected.overall.estimate)
    assert api["calibration_bias"]["missed_failures"]["k"] == 1


def test_without_a_calibration_sample_the_card_says_why(admin_client: Client) -> None:
    judge = make_judge()
    make_judgment(judge=judge, generation=make_generation())
    page = admin_client.get(reverse("judges:report_card", args=[judge.judge_id])).content.decode()
    assert "No calibration sample covers a generator this judge judged" in page
    api = admin_client.get(f"/api/judges/{judge.judge_id}/report-card/").json()
    assert api["calibration_bias"] is None and api["no_calibration_bias_reason"]
