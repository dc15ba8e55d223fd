"""The agreement pages in headless Chromium: a study annotated through the real services and judged by two
judges; alpha, the judges' bars and confusion matrices, the annotators, and the disagreements side by side
(hovering a failure highlights its steps). Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.base.models import Study
from tests.annotation.conftest import make_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.browser.conftest import screenshot
from tests.factories import make_judge, make_judgment

pytestmark = pytest.mark.browser


@pytest.fixture
def judged_study(transactional_db: None) -> Study:
    study = make_study(n_items=4, k=4, slug="agree", items_per_participant=0)
    annotate(study)
    items = items_in_order(study)
    gpt, demo = make_judge(model="gpt-5"), make_judge(model="SmolLM2-135M-Instruct")
    demo.is_demo_model = True
    demo.save()
    for item, says_failure in zip(items, [True, True, False, False], strict=True):
        verdict(demo, item, not says_failure)
        if item != items[2]:
            verdict(gpt, item, says_failure)
    # the humans' majority says no failure on item 2: gpt-5 disagrees
    make_judgment(judge=gpt, generation=items[2], failures=[("Uses <b>cold</b> oil; L1 warms it", [1], [1])])
    return study


def test_it_shows_a_studys_agreement_and_a_judges_disagreements(
    staff_page: Any, live_server: Any, judged_study: Study
) -> None:
    page = staff_page
    page.goto(f"{live_server.url}/agreement/{judged_study.slug}/")
    assert page.get_by_role("heading", name="Agreement: Coconut study").is_visible()
    assert page.locator("svg[role=img]").count() == 2
    assert page.get_by_text("demo model - judgments not meaningful").first.is_visible()
    screenshot(page, "agreement-study")

    page.get_by_role("link", name="Disagreements").first.click()
    page.wait_for_url("**/judges/**")
    failure = page.locator(".failure", has_text="Uses <b>cold</b> oil").first  # escaped, shown as text
    failure.hover()
    prefix = page.locator("[data-step-prefix]", has=failure).get_attribute("data-step-prefix")
    linked = page.locator(f"#{prefix}l2-step-1")
    assert "is-linked" in (linked.get_attribute("class") or "")
    unlinked = page.locator(f"#{prefix}l2-step-3")
    background = "e => getComputedStyle(e).backgroundColor"
    assert linked.evaluate(background) != unlinked.evaluate(background)  # the highlight shows
    screenshot(page, "agreement-disagreements")

    page.goto(f"{live_server.url}/agreement/")
    assert page.get_by_role("link", name="Coconut study").is_visible()
    screenshot(page, "agreement-overview")
