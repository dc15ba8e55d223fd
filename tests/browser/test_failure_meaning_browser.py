"""Failures by meaning in Chromium (#22 item 4): the Similar failures control of the failure browser and of
the generation page (htmx), and a topic's failure patterns page, at 1440 and 390 pixels wide, with no
sideways scrolling. Screenshots go to test-artifacts/screenshots/failure-meaning-*.png."""

from __future__ import annotations

from typing import Any

import pytest

from judging.models import CriticalFailure
from tests.annotation.test_failure_meaning import failure_world
from tests.annotation.test_failure_patterns import run_patterns
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, SCREENSHOTS, screenshot

pytestmark = pytest.mark.browser
WIDTHS = {"desktop": DESKTOP, "phone": PHONE}


def viewport_screenshot(page: Any, name: str) -> None:
    """The visible part only: a list of 50 failures is unreadable as one full-page image."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_similar_failures_control_lists_the_nearest_failures(
    staff_page: Any, live_server: Any, width: str
) -> None:
    failure_world()
    staff_page.set_viewport_size(WIDTHS[width])
    staff_page.goto(f"{live_server.url}/failures/")
    first = staff_page.locator(".failure-row").first
    first.get_by_role("link", name="Similar failures").click()
    items = first.locator(".similar-item")
    items.first.wait_for()
    assert items.count() == 10
    distances = [float(d) for d in first.locator(".distance").all_inner_texts()]
    assert distances == sorted(distances)
    assert staff_page.url == f"{live_server.url}/failures/"  # htmx: the list came in place
    assert staff_page.evaluate(PAGE_OVERFLOW) == 0
    first.scroll_into_view_if_needed()
    viewport_screenshot(staff_page, f"failure-meaning-similar-{width}")
    generation = CriticalFailure.objects.order_by("pk").first().judgment.generation_id  # type: ignore[union-attr]
    staff_page.goto(f"{live_server.url}/generations/{generation}/")
    item = staff_page.locator("li.failure").first
    item.get_by_role("link", name="Similar failures").click()
    item.locator(".similar-item").first.wait_for()
    assert staff_page.evaluate(PAGE_OVERFLOW) == 0
    viewport_screenshot(staff_page, f"failure-meaning-generation-{width}")


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_failure_patterns_page_fits_and_opens_a_patterns_failures(
    staff_page: Any, live_server: Any, width: str
) -> None:
    world = failure_world()
    run = run_patterns(world["topic"], k=3)
    staff_page.set_viewport_size(WIDTHS[width])
    staff_page.goto(f"{live_server.url}/failures/patterns/{world['topic'].pk}/")
    assert staff_page.locator(".pattern").count() == 3
    assert staff_page.evaluate(PAGE_OVERFLOW) == 0
    screenshot(staff_page, f"failure-meaning-patterns-{width}")
    largest = run.patterns.get(rank=1)
    staff_page.locator("#pattern-1").get_by_role("link", name=f"See its {largest.size} failures").click()
    staff_page.wait_for_url(f"**/failures/?pattern={largest.pk}")
    assert staff_page.locator(".failure-row").count() == largest.size
    assert staff_page.evaluate(PAGE_OVERFLOW) == 0
    staff_page.goto(f"{live_server.url}/failures/patterns/")
    assert staff_page.evaluate(PAGE_OVERFLOW) == 0
    screenshot(staff_page, f"failure-meaning-topics-{width}")
