"""The calibrated leaderboard and the report card's bias section (#20) in Chromium at 1,440 and 390 px, on a
realistic calibration sample (screenshots in test-artifacts/screenshots/calibrated-*.png): neither page
widens a phone's page, the calibrated score and the judge-only one are on screen in each card."""

from __future__ import annotations

from typing import Any

import pytest

from tests.annotation.calibration_world import realistic_world
from tests.browser.conftest import BOX_OVERFLOW, DESKTOP, PAGE_OVERFLOW, PHONE, SCREENSHOTS, screenshot

pytestmark = pytest.mark.browser


def test_the_calibrated_leaderboard_and_the_bias_fit_a_phone(staff_page: Any, live_server: Any) -> None:
    world = realistic_world()
    judge = world["judge"]
    page = staff_page
    for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.goto(f"{live_server.url}/leaderboard/calibrated/")
        assert page.locator("h1").inner_text() == "Human-calibrated How2Score"
        assert page.locator(".calibrated-table tbody tr").count() == 5  # 4 sampled + 1 never sampled
        assert page.locator(".calibrated-table .forest-point").count() >= 8
        screenshot(page, f"calibrated-leaderboard-{name}")
        assert page.evaluate(PAGE_OVERFLOW) <= 0, name
        first = page.locator(".calibrated-table tbody tr").first
        assert first.locator(".score-value").is_visible()
        assert "%" in first.locator("[data-label=Judge-only]").inner_text()  # beside it, on screen
        assert first.locator("[data-label=Judge-only]").is_visible()
        page.goto(f"{live_server.url}/judges/{judge.judge_id}/")  # type: ignore[attr-defined]
        page.locator("#bias-h").scroll_into_view_if_needed()
        assert page.locator(".bias-table").is_visible()
        screenshot(page, f"calibrated-report-card-{name}")
        section = page.locator("section[aria-labelledby=bias-h]")
        section.screenshot(path=str(SCREENSHOTS / f"calibrated-bias-{name}.png"))
        assert page.evaluate(PAGE_OVERFLOW) <= 0, name
        if name == "phone":
            assert page.evaluate(BOX_OVERFLOW, "section[aria-labelledby=bias-h] .table-wrap") <= 0
    page.goto(f"{live_server.url}/leaderboard/calibrated/")
    page.locator(".calibrated-table a", has_text="by topic").first.click()
    page.wait_for_selector(".calibrated-topics")
    screenshot(page, "calibrated-topics-phone")
    assert page.evaluate(PAGE_OVERFLOW) <= 0
