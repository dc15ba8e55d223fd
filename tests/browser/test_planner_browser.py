"""The budget planner (/calibration/plan/) in headless Chromium at 1,440 and 390 px: the form, a plan from
the labels of a study annotated through the real services, the paper's example; no sideways scrolling at
390 px, and a bad value shown beside its field; a per-topic plan from the defaults (the agreement derived,
a topic whose judge gives one verdict planned from human labels alone) and an impossible agreement refused
with its range (#31 item 2). Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.annotation.test_agreement_pages import verdict
from tests.annotation.test_planner import world  # noqa: F401 (the fixture)
from tests.browser.conftest import PAGE_OVERFLOW, both_widths, screenshot
from tests.factories import make_generation, make_procedure

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1440, 390])
def test_it_plans_in_the_browser_without_sideways_scrolling(
    staff_page: Any,
    live_server: Any,
    world: dict[str, Any],  # noqa: F811 (the fixture imported above)
    width: int,
) -> None:
    page = staff_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/calibration/plan/")
    assert page.get_by_role("heading", name="Example: the paper's setting").is_visible()
    page.select_option("#id_judge", "judge-plan")
    page.select_option("#id_generator", world["generator"].generator_id)
    page.select_option("#id_scope", "difference")
    page.select_option("#id_other_generator", "gen-other")
    page.fill("#id_half_width_pp", "30")
    page.fill("#id_fee_percent", "25")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**/calibration/plan/?*")
    assert page.get_by_text("more human-labelled items", exact=True).is_visible()
    assert page.locator(".planner-table tbody tr").count() >= 2 + 1 + 3  # parts, detectable, paper
    assert page.evaluate(PAGE_OVERFLOW) <= 0, f"the page scrolls sideways at {width} px"
    screenshot(page, f"planner-difference-{width}")

    page.fill("#id_half_width_pp", "0")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**/calibration/plan/?*")
    error = page.locator(".form-row.has-error", has=page.locator("#id_half_width_pp"))
    assert error.get_by_role("alert").is_visible()
    assert page.evaluate(PAGE_OVERFLOW) <= 0
    screenshot(page, f"planner-error-{width}")


def test_the_defaults_plan_each_topic_and_an_impossible_agreement_says_its_range(
    staff_page: Any,
    live_server: Any,
    world: dict[str, Any],  # noqa: F811 (the fixture imported above)
) -> None:
    """gen-other's Food examples (the judge passes 5 of 10) and two Cooking examples it passes both of: with
    the form's defaults "each topic" plans both (it answered 400 before #31); 99.5 % is refused on Food."""
    for i in range(2):
        procedure = make_procedure(goal=f"Cooking {i}", topic="Cooking")
        verdict(world["judge"], make_generation(generator=world["other"], procedure=procedure), False)
    page = staff_page
    page.goto(f"{live_server.url}/calibration/plan/")
    page.select_option("#id_judge", "judge-plan")
    page.select_option("#id_generator", "gen-other")
    page.select_option("#id_scope", "topics")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**/calibration/plan/?*")
    rows = page.locator(".planner-table").first.locator("tbody tr")
    assert rows.count() == 2
    assert "the same verdict" in rows.nth(0).inner_text()  # Cooking: the judge passes both
    assert "(derived)" in rows.nth(1).inner_text()  # Food
    both_widths(page, "planner-topics-defaults")
    page.fill("#id_agreement_pp", "99.5")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**/calibration/plan/?*")
    error = page.locator(".form-row.has-error", has=page.locator("#id_agreement_pp"))
    assert "between 1.0 % (as opposed" in error.get_by_role("alert").inner_text()
    both_widths(page, "planner-impossible-agreement")
