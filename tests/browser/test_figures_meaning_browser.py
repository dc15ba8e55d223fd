"""The figures of #19 items 16, 19 and 20 in Chromium at 1440 and 390 px: the report card with a human tie
left out (and said so), an undefined kappa shown "—" whose tooltip is the reason, a study listed with why it
has no figure; the study's agreement page; the step-types agreement with the contradiction rate on both
bases; an empty multiple-choice validation, the empty agreement overview and the empty leaderboard with
their reasons. Screenshots go to
test-artifacts/screenshots/figures-*.png; no page scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.annotation.conftest import make_study
from tests.annotation.goal_step.test_mc_kind import make_mc_study
from tests.annotation.step_types.labelled import table6_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.browser.conftest import PAGE_OVERFLOW, PHONE, screenshot
from tests.factories import make_judge

pytestmark = pytest.mark.browser

ONE_ITEM = "undefined: only 1 item to compare (at least 2 needed)"


def _visit(page: Any, url: str, name: str, text: str) -> None:
    for width, suffix in ((1440, "desktop"), (390, "phone")):
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else PHONE["height"]})
        page.goto(url)
        page.get_by_text(text).first.wait_for()
        screenshot(page, f"figures-{name}-{suffix}")
        overflow = page.evaluate(PAGE_OVERFLOW)
        assert overflow <= 0, f"{name} at {width} px scrolls sideways by {overflow} px"


def test_the_figures_say_what_they_mean(staff_page: Any, live_server: Any) -> None:
    empty_leaderboard = f"{live_server.url}/"
    _visit(staff_page, empty_leaderboard, "leaderboard-empty", "No reference procedure (L1)")
    _visit(
        staff_page, f"{live_server.url}/agreement/", "overview-empty", "No critical-failures or step-types"
    )

    study = make_study(n_items=4, k=4, slug="agree", items_per_participant=0)
    annotate(study)
    items = items_in_order(study)
    judge, other = make_judge(model="org/judge-under-test"), make_judge(model="org/other-judge")
    verdict(judge, items[0], False)  # humans: failure (3 of 4)
    verdict(judge, items[1], True)  # humans: 2-2 tie, left out
    verdict(other, items[0], True)
    waiting = make_study(n_items=2, slug="waiting")
    verdict(judge, items_in_order(waiting)[0], True)
    errors: list[str] = []
    staff_page.on("pageerror", lambda error: errors.append(str(error)))

    _visit(
        staff_page, f"{live_server.url}/judges/{judge.judge_id}/", "report-card", "Agreement with the human"
    )
    tie_note = staff_page.get_by_text("1 item on which the humans tie is left out of every figure below")
    assert tie_note.is_visible()
    undefined = staff_page.locator(f'span.not-computed[title="{ONE_ITEM}"]')
    assert undefined.count() == 3  # kappa and AC1 against the humans, kappa against the other judge
    assert staff_page.get_by_text("nobody has entered it yet").is_visible()

    _visit(staff_page, f"{live_server.url}/agreement/{study.slug}/", "study-agreement", "Judges against")
    assert staff_page.locator(f'span.not-computed[title="{ONE_ITEM}"]').count() == 2

    table6, _ = table6_study()
    _visit(staff_page, f"{live_server.url}/agreement/{table6.slug}/", "step-types", "Table 6")
    assert staff_page.get_by_text("of every sequential pair (majority) is also interchangeable").is_visible()
    assert staff_page.get_by_text("of the comparable sequential pairs are also interchangeable").is_visible()

    validation = make_mc_study()
    _visit(staff_page, f"{live_server.url}/agreement/{validation.slug}/", "mc-validation", "No answers yet")
    assert staff_page.get_by_text("nobody has entered it yet").is_visible()
    assert not errors, errors
