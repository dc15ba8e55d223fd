"""The training run pages in Chromium at 1440 and 390 px (issue #32 item 3): a run driven over real HTTP
through POST /api/reward/ (a loopback judge that favours long answers), its alarm banner, its three charts
and its table; the page's body refreshes itself while the trainer keeps calling; on a phone the table
scrolls inside its shaded box and the charts fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.browser.conftest import BOX_OVERFLOW, PHONE, both_widths, screenshot
from tests.llm_server import LoopbackLLM
from tests.reward_world import trainer, write_reward_config
from tests.training_world import drifting_ratios, favours_long_answers, step_items

pytestmark = pytest.mark.django_db(transaction=True)


class Trainer:
    """A GRPO loop's reward calls over HTTP to the live server."""

    def __init__(self, base_url: str, token: str, run: str) -> None:
        self.url, self.token, self.run = f"{base_url}/api/reward/", token, run

    def steps(self, ratios: list[float], first: int = 0) -> None:
        for step, ratio in enumerate(ratios, first):
            body = {"run": self.run, "policy": "toy/policy-1.7b", "items": step_items(ratio, step)}
            answer = requests.post(
                self.url, json=body, headers={"Authorization": f"Token {self.token}"}, timeout=30
            )
            assert answer.status_code == 200, answer.text[:300]


@pytest.fixture
def drifting(live_server: Any, settings: Any, tmp_path: Path) -> Any:
    with LoopbackLLM(responder=favours_long_answers) as judge:
        settings.H2E_REWARD_CONFIG_DIR = str(tmp_path / "rewards")
        settings.H2E_DEFAULT_REWARD = "loopback"
        write_reward_config(tmp_path / "rewards", "loopback", base_urls=[judge.base_url])
        _, token = trainer()
        yield Trainer(live_server.url, token, "qwen3-grpo/no-length-reward")


def test_the_run_page_shows_the_alarm_charts_and_table_and_follows_the_run(
    staff_page: Any, live_server: Any, drifting: Trainer
) -> None:
    ratios = drifting_ratios(20, 1.0, 1.5)
    drifting.steps(ratios[:18])
    page = staff_page
    page.goto(f"{live_server.url}/training/runs/")
    page.get_by_role("link", name="Training", exact=True).wait_for()
    both_widths(page, "training/runs")
    page.get_by_role("link", name=drifting.run).click()

    banner = page.locator(".alarm-banner[role=alert]")
    assert banner.inner_text().startswith("Length-gaming alarm from step ")
    assert page.locator("figure.run-chart svg").count() == 3
    assert page.locator(".chart-target").count() == 1 and page.locator(".chart-alarm").count() == 3
    assert page.locator("tr.is-alarm").count() == 1
    checkpoints = page.locator("#checkpoints")
    assert "No checkpoints registered." in checkpoints.inner_text()
    register = checkpoints.get_by_role("link", name="Register checkpoints")
    assert register.get_attribute("href") == f"/training/runs/{drifting.run}/checkpoints/"
    both_widths(page, "training/run")

    page.set_viewport_size(PHONE)
    charts = page.locator(".run-charts")
    charts.screenshot(path=str(screenshot(page, "training/run-phone").parent / "run-charts-phone.png"))
    assert page.evaluate(BOX_OVERFLOW, "#run-body .table-wrap") > 0  # the table scrolls in its box ...
    for chart in page.locator("figure.run-chart svg").all():  # ... and each chart fits the window
        box = chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]

    drifting.steps(ratios[18:], first=18)  # the trainer goes on: the open page follows within one poll
    page.locator('#run-body tr[data-step="19"]').wait_for(timeout=15_000)
    screenshot(page, "training/run-followed-phone")
