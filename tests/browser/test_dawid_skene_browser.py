"""The agreement page's "Beyond the majority (Dawid-Skene)" section in Chromium at 1,440 and 390 px: a
critical-failures study annotated through the real services by a careful annotator, a spammer and three
average annotators (tests/annotation/test_dawid_skene.py's crafted set), where Dawid-Skene overrules the
majority on three items; and a pairwise study's section. Screenshots go to
test-artifacts/screenshots/dawid-skene/."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotation.base.models import Study
from annotation.kinds.critical_failures.questions import FAILURE
from tests.annotation.conftest import make_study
from tests.annotation.pairwise.helpers import make_pairwise_study
from tests.annotation.test_agreement_pages import annotate, items_in_order
from tests.annotation.test_dawid_skene import N_ITEMS, TRUTH, WRONG, answer_pairs
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, SCREENSHOTS, screenshot

pytestmark = pytest.mark.browser
SIZES = {"desktop": DESKTOP, "phone": PHONE}
SECTION = "Beyond the majority (Dawid\N{EN DASH}Skene)"


@pytest.fixture
def crafted_study(transactional_db: None) -> Study:
    study = make_study(n_items=N_ITEMS, k=5, slug="crafted", items_per_participant=0)
    truth = [label == FAILURE for label in TRUTH]
    verdicts = {1: truth, 2: [False] * N_ITEMS}  # the careful annotator, the spammer
    for n, wrong in enumerate(WRONG.values(), start=3):
        verdicts[n] = [not says if i in wrong else says for i, says in enumerate(truth)]
    annotate(study, verdicts)
    return study


def test_it_shows_where_dawid_skene_overrules_the_majority(
    staff_page: Any, live_server: Any, crafted_study: Study
) -> None:
    page = staff_page
    overruled = items_in_order(crafted_study)[:3]
    for name, size in SIZES.items():
        page.set_viewport_size(size)
        page.goto(f"{live_server.url}/agreement/{crafted_study.slug}/")
        section = page.locator("#beyond-majority")
        assert section.get_by_role("heading", name=SECTION).is_visible()
        assert section.locator("table").first.locator("tbody tr").count() == 5
        differences = section.locator("table").nth(1).locator("tbody tr")
        assert differences.count() == 3
        for generation in overruled:
            href = reverse("failures:generation_detail", args=[generation.pk])
            assert section.locator(f"a[href='{href}']").count() == 1
        assert page.evaluate(PAGE_OVERFLOW) <= 0, name
        screenshot(page, f"dawid-skene/critical-failures-{name}")
        section.screenshot(path=str(SCREENSHOTS / f"dawid-skene/critical-failures-section-{name}.png"))
    section.get_by_role("link", name=overruled[0].procedure.goal).click()
    page.wait_for_url(f"**/generations/{overruled[0].pk}/")


def test_a_pairwise_study_has_the_section_too(
    staff_page: Any, live_server: Any, transactional_db: None
) -> None:
    study = make_pairwise_study(n_goals=2, k=3)
    answer_pairs(study, {1: "a_better", 2: "a_better", 3: "b_better"})
    page = staff_page
    for name, size in SIZES.items():
        page.set_viewport_size(size)
        page.goto(f"{live_server.url}/agreement/{study.slug}/")
        assert page.get_by_role("heading", name=SECTION).is_visible()
        assert page.get_by_role("heading", name="Which L2 has fewer critical failures?").is_visible()
        assert page.evaluate(PAGE_OVERFLOW) <= 0, name
        screenshot(page, f"dawid-skene/pairwise-{name}")
