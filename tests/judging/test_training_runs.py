"""Training runs watched (issue #32 item 3): the length-gaming alarm's acceptance test through the real reward
service (POST /api/reward/ with a loopback judge that favours long answers), the figures the database adds
up against the calls, and the pages and API: staff only, a run's name escaped, the live body's polling."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from judging.models import RewardCall, TrainingRun
from judging.training.selectors import step_sums_by_run
from judging.training.watch import CallFigures, StepSums
from tests.factories import logged_in, make_judge, make_user
from tests.llm_server import LoopbackLLM
from tests.reward_world import trainer, write_reward_config
from tests.training_world import drifting_ratios, favours_long_answers, run_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def rewards(settings: Any, tmp_path: Path) -> Any:
    with LoopbackLLM(responder=favours_long_answers) as judge:
        settings.H2E_REWARD_CONFIG_DIR = str(tmp_path / "rewards")
        settings.H2E_DEFAULT_REWARD = "loopback"
        write_reward_config(tmp_path / "rewards", "loopback", base_urls=[judge.base_url])
        yield judge


def api(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def staff() -> Client:
    return logged_in(make_user(is_staff=True))


def test_a_drifting_run_raises_the_alarm_where_the_ratio_leaves_the_band_and_a_control_none(
    rewards: LoopbackLLM,
) -> None:
    _, token = trainer()
    drift = run_post(api(token), "toy-drift", drifting_ratios(20, 1.0, 1.5))
    run_post(api(token), "toy-control", drifting_ratios(20, 1.0, 1.0))
    # By hand from what the service answered: each step's ratios, their t interval, How2Score.
    ratios = [[item["length_ratio"] for item in step] for step in drift]
    lows = [DescrStatsW(np.array(r)).tconfint_mean(0.05)[0] for r in ratios]
    scores = [np.mean([item["how2score"] for item in step]) for step in drift]
    expected = next(step for step, low in enumerate(lows) if low > 1.2)
    assert 5 < expected < 19 and scores[expected] > scores[0]  # the drift and the rise are real

    body = staff().get(reverse("api:training-run", args=["toy-drift"])).json()
    assert body["alarm"]["flagged"] is True and body["alarm"]["from_step"] == expected
    assert body["alarm"]["band"] == pytest.approx([0.8, 1.2]) and body["tau"] == 0.2
    assert body["alarm"]["ratio_interval"][0] == pytest.approx(lows[expected])
    assert body["bucket_size"] == 1 and [b["first_step"] for b in body["buckets"]] == list(range(20))
    assert [b["how2score"] for b in body["buckets"]] == pytest.approx(scores)
    control = staff().get(reverse("api:training-run", args=["toy-control"])).json()
    assert control["alarm"]["flagged"] is False and control["alarm"]["from_step"] is None

    page = staff().get(reverse("judging:training_run", args=["toy-drift"])).content.decode()
    assert f"Length-gaming alarm from step {expected}</strong>" in page
    assert f'data-alarm-step="{expected}"' in page
    listing = staff().get(reverse("judging:training_runs")).content.decode()
    assert f"alarm from step {expected}" in listing and listing.count("no alarm</span>") == 1


def _calls(run: TrainingRun, step: int | None, figures: list[CallFigures]) -> None:
    RewardCall.objects.bulk_create(
        RewardCall(
            run=run,
            step=step,
            reward_name=run.reward_name,
            procedure_key="k" * 64,
            answer="1. a",
            how2score=f.how2score,
            format=f.format,
            length=f.length,
            length_ratio=f.length_ratio,
            total=f.total,
            from_store=f.from_store,
            error=f.error,
        )
        for f in figures
    )


def _run(name: str = "grpo-a", **fields: Any) -> TrainingRun:
    config = {"tau": 0.2, "alpha": 5.0, "weights": {"how2score": 1.0, "format": 1.0, "length": 0.5}}
    return TrainingRun.objects.create(name=name, reward_name="loopback", reward_config=config, **fields)


FIGURES = [
    CallFigures(1, 1, 1.0, 1.1, 3.0, False),
    CallFigures(0, 1, 0.8, 1.3, 1.8, True),
    CallFigures(None, 0, 0.5, 1.45, None, False, "the judge failed: 400"),
    CallFigures(1, None, None, None, None, True),
]


def test_the_database_adds_up_what_the_calls_hold() -> None:
    run, other = _run(), _run("grpo-b")
    _calls(run, 3, FIGURES)
    _calls(run, 4, FIGURES[:2])
    _calls(run, None, FIGURES)  # no step: left out
    _calls(other, 3, FIGURES[:1])
    sums = step_sums_by_run([run.pk, other.pk])

    def figures(by_step: dict[int, StepSums]) -> dict[int, Any]:
        """Each step's sums as numbers compared to the last bits: the database adds floats in its order."""
        return {step: pytest.approx(asdict(value), rel=1e-12) for step, value in by_step.items()}

    assert set(sums) == {run.pk, other.pk} and set(sums[run.pk]) == {3, 4}
    assert {s: asdict(v) for s, v in sums[run.pk].items()} == figures(
        {3: StepSums.of_calls(FIGURES), 4: StepSums.of_calls(FIGURES[:2])}
    )
    assert {s: asdict(v) for s, v in sums[other.pk].items()} == figures({3: StepSums.of_calls(FIGURES[:1])})
    assert sums[run.pk][3].ratio_squares == pytest.approx(1.1**2 + 1.3**2 + 1.45**2)


def test_the_api_gives_each_figure_with_its_interval() -> None:
    run = _run(judge=make_judge(judge_id="jdg-reward"))
    _calls(run, 0, FIGURES)
    _calls(run, None, FIGURES[:1])
    body = staff().get(reverse("api:training-run", args=[run.name])).json()
    assert (body["judge"], body["n_calls"], body["n_steps"], body["n_calls_without_step"]) == (
        "jdg-reward",
        5,
        1,
        1,
    )
    (bucket,) = body["buckets"]
    assert bucket["how2score"] == 2 / 3 and bucket["how2score_interval"] == pytest.approx(
        proportion_confint(2, 3, method="wilson")
    )
    assert bucket["format_rate"] == 2 / 3 and bucket["how2score_format_ok"] == 1 / 2
    assert bucket["ratio_interval"] == pytest.approx(DescrStatsW(np.array([1.1, 1.3, 1.45])).tconfint_mean())
    assert (bucket["store_share"], bucket["n_errors"]) == (0.5, 1)
    assert body["reward_config"]["weights"]["length"] == 0.5
    listing = staff().get(reverse("api:training-runs")).json()
    assert listing["count"] == 1 and listing["results"][0]["alarm"]["flagged"] is False


def test_the_pages_and_the_api_are_for_staff_only() -> None:
    run = _run()
    pages = [reverse("judging:training_runs"), reverse("judging:training_run", args=[run.name])]
    for url in pages:
        assert Client().get(url).status_code == 302 and "/accounts/login/" in Client().get(url)["Location"]
        assert logged_in(make_user()).get(url).status_code == 403
        assert staff().get(url).status_code == 200
        assert staff().post(url).status_code == 405
    for url in (reverse("api:training-runs"), reverse("api:training-run", args=[run.name])):
        assert APIClient().get(url).status_code in (401, 403)
        assert logged_in(make_user()).get(url).status_code == 403
    assert staff().get(reverse("judging:training_run", args=["no-such-run"])).status_code == 404
    assert staff().get(reverse("api:training-run", args=["no-such-run"])).status_code == 404


def test_a_run_name_with_html_or_a_slash_is_escaped_and_reached() -> None:
    run = _run("<b>evil</b>/grpo & co", policy='<img src=x onerror="alert(1)">')
    _calls(run, 0, FIGURES)
    page = staff().get(reverse("judging:training_run", args=[run.name]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "<b>evil</b>" not in text and "&lt;b&gt;evil&lt;/b&gt;/grpo &amp; co" in text
    assert "<img src=x" not in text and "&lt;img src=x" in text
    listing = staff().get(reverse("judging:training_runs")).content.decode()
    assert "<b>evil</b>" not in listing and "&lt;b&gt;evil&lt;/b&gt;" in listing
    api_body = staff().get(reverse("api:training-run", args=[run.name])).json()
    assert api_body["name"] == run.name and api_body["policy"] == run.policy


def test_a_live_run_polls_its_body_and_a_quiet_one_does_not() -> None:
    run = _run()
    _calls(run, 0, FIGURES)
    url = reverse("judging:training_run", args=[run.name])
    live = staff().get(url).content.decode()
    assert f'hx-get="{url}" hx-trigger="every 5s"' in live and 'hx-disinherit="*"' in live
    assert 'id="checkpoints"' in live and "No checkpoints registered" in live
    fragment = staff().get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="run-body"') and 'id="checkpoints"' not in fragment
    assert "<html" not in fragment
    RewardCall.objects.update(created_at=timezone.now() - timedelta(hours=1))
    quiet = staff().get(url).content.decode()
    assert "hx-trigger" not in quiet.split('id="run-body"', 1)[1].split(">", 1)[0]


def test_the_list_reads_the_runs_in_a_fixed_number_of_queries() -> None:
    client = staff()
    for n in range(3):
        _calls(_run(f"grpo-{n}"), n, FIGURES)
    with CaptureQueriesContext(connection) as three:
        assert client.get(reverse("judging:training_runs")).status_code == 200
    for n in range(3, 8):
        _calls(_run(f"grpo-{n}"), n, FIGURES)
    with CaptureQueriesContext(connection) as eight:
        page = client.get(reverse("judging:training_runs"))
    assert len(eight) == len(three) and page.content.decode().count('<tr data-run="') == 8


def test_the_navigation_has_a_training_entry() -> None:
    page = staff().get(reverse("judging:training_runs")).content.decode()
    assert f'<a href="{reverse("judging:training_runs")}" aria-current="page">Training</a>' in page
