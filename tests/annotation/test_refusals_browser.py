"""Every refusal a participant can meet, in Chromium: a closed study, a lost lease, an out-of-order click
and a refused submit each show their reason next to where the participant acted (htmx swaps 4xx answers);
and the item page on a phone (390 px): L1 and L2 as two tabs, tap targets of at least 24 x 24 CSS px."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from annotation.base.models import Assignment, AssignmentStatus, Study
from tests.annotation.conftest import make_study
from tests.annotation.test_annotator_browser import COCONUT_L1, COCONUT_L2, htmx_ready, qualify, read_steps
from tests.browser.conftest import LAPTOP, PHONE, screenshot

pytestmark = pytest.mark.browser


@pytest.fixture
def open_tab(browser: Any, live_server: Any, transactional_db: None) -> Iterator[Any]:
    contexts: list[Any] = []

    def open_one(viewport: dict[str, int] = LAPTOP) -> Any:
        context = browser.new_context(viewport=viewport, has_touch=viewport == PHONE)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_one
    for context in contexts:
        context.close()


def at_item(open_tab: Any, live_server: Any, viewport: dict[str, int] = LAPTOP) -> tuple[Any, Study]:
    study = make_study(n_items=2, k=3, l1=COCONUT_L1, l2=COCONUT_L2, items_per_participant=2)
    page = open_tab(viewport)
    qualify(page, live_server, study.slug)
    return page, study


def acknowledge(page: Any) -> None:
    htmx_ready(page, "#ack-goal").click()
    page.get_by_text("Reading progress: 0/4 steps").wait_for()
    htmx_ready(page, "#l2-step-1 button")


def refusal_in_reading(page: Any, text: str) -> Any:
    """The refusal shown in the reading area, where the participant clicked: visible, saying `text`."""
    alert = page.locator("#reading [role=alert]")
    alert.wait_for()
    assert alert.is_visible() and text in alert.inner_text()
    return alert


def test_it_shows_a_closed_study_where_the_participant_clicked(open_tab: Any, live_server: Any) -> None:
    page, study = at_item(open_tab, live_server)
    acknowledge(page)
    Study.objects.filter(pk=study.pk).update(is_open=False)
    htmx_ready(page, "#l2-step-1 button").click()
    refusal_in_reading(page, "This study is not taking part any more. Please return it on Prolific.")
    screenshot(page, "annotation/refusal-closed-study")


def test_it_shows_a_lost_lease_and_the_way_on(open_tab: Any, live_server: Any) -> None:
    page, _ = at_item(open_tab, live_server)
    acknowledge(page)
    Assignment.objects.filter(status=AssignmentStatus.ACTIVE).update(status=AssignmentStatus.EXPIRED)
    htmx_ready(page, "#l2-step-1 button").click()
    alert = refusal_in_reading(page, "Your time for this item ran out")
    screenshot(page, "annotation/refusal-lost-lease")
    alert.get_by_role("link", name="Continue with the next item").click()
    page.get_by_text("Reading progress: 0/4 steps").wait_for()  # a new item


def test_it_shows_an_out_of_order_click_where_it_was_made(open_tab: Any, live_server: Any) -> None:
    page, _ = at_item(open_tab, live_server)
    acknowledge(page)
    # A tampered page asks for step 3 while step 1 is the next one to read.
    page.evaluate(
        """() => { const b = document.querySelector('#l2-step-1 button');
                   b.setAttribute('hx-post', b.getAttribute('hx-post').replace('/steps/1/', '/steps/3/'));
                   htmx.process(b); }"""
    )
    htmx_ready(page, "#l2-step-1 button").click()
    refusal_in_reading(page, "Read the L2 steps in order: the next one is step 1.")
    assert page.locator("#l2-step-1 button").is_visible()  # still the step to read next
    screenshot(page, "annotation/refusal-out-of-order")


def test_it_shows_a_refused_submit_next_to_the_failure_it_concerns(open_tab: Any, live_server: Any) -> None:
    page, _ = at_item(open_tab, live_server)
    acknowledge(page)
    read_steps(page, 4, 4)
    page.select_option("#has-failure", "yes")
    page.fill("#failure-0-description", "Never says to rinse the spoon")
    page.get_by_role("button", name="Submit & Continue").click()
    entry_error = page.locator("#failure-0-anchor .field-error")
    entry_error.wait_for()
    assert (
        entry_error.is_visible() and "select the L1 and/or L2 step(s) it concerns" in entry_error.inner_text()
    )
    assert page.input_value("#failure-0-description") == "Never says to rinse the spoon"
    page.get_by_role("link", name="Show me").click()
    screenshot(page, "annotation/refusal-submit")


def test_it_lays_the_item_out_for_a_phone(open_tab: Any, live_server: Any) -> None:
    page, _ = at_item(open_tab, live_server, PHONE)
    tabs = page.locator(".compare-tabs")
    assert tabs.is_visible()
    acknowledge(page)
    l1, l2 = page.locator(".steps-col-l1"), page.locator(".steps-col-l2")
    assert l2.is_visible() and not l1.is_visible()
    htmx_ready(page, "#l2-step-1 button").click()
    page.get_by_text("Reading progress: 1/4 steps").wait_for()
    page.get_by_role("button", name="L1 reference").click()
    assert l1.is_visible() and not l2.is_visible()
    assert page.locator("#l1-step-2 .step-n").inner_text() == "2"  # numbered as L2 is
    screenshot(page, "annotation/phone-l1-tab")
    page.get_by_role("button", name="L2 to evaluate").click()
    for n in range(2, 5):  # the L2 tab stays chosen across the reading fragment's swaps
        htmx_ready(page, f"#l2-step-{n} button").click()
        page.get_by_text(f"Reading progress: {n}/4 steps").wait_for()
        assert l2.is_visible()
    page.select_option("#has-failure", "yes")
    targets = [
        page.locator(".step-chip span").first,
        page.locator(".compare-tab").first,
        page.locator("#has-failure"),
    ]
    for target in targets:
        box = target.bounding_box()
        assert box is not None and box["width"] >= 24 and box["height"] >= 24, box
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scrolling
    screenshot(page, "annotation/phone-item")


def test_it_keeps_both_columns_side_by_side_on_a_laptop(open_tab: Any, live_server: Any) -> None:
    page, _ = at_item(open_tab, live_server)
    assert not page.locator(".compare-tabs").is_visible()
    acknowledge(page)
    assert page.locator(".steps-col-l1").is_visible() and page.locator(".steps-col-l2").is_visible()
