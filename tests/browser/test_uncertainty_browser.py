"""The uncertainty pages of #12 in Chromium, at a desktop width and at 390 px, with screenshots: the
leaderboard's interval bars, separability and "≠ / ≈ next" marks, sorted by a header click; the compare page
of two generators and one discordant example side by side; a judge's report card; a heatmap cell opening the
failure browser, and the failure CSV link."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.base.models import Study
from tests.annotation.test_agreement_pages import annotate
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, screenshot
from tests.browser.test_research_pages_browser import research_world
from tests.factories import make_judgment

pytestmark = pytest.mark.browser
# The elements that stick out of the viewport (outside the tables' own scroll boxes), for the message.
OVERFLOWING = """() => { const w = document.documentElement.clientWidth; const out = [];
  for (const el of document.querySelectorAll('body *')) { const r = el.getBoundingClientRect();
    const clipped = el.parentElement && el.parentElement.closest('.table-wrap, .chart-scroll');
    if (r.right > w + 1 && !clipped) out.push(el.tagName + '.' + el.className + ':' + Math.round(r.right)); }
  return out.slice(0, 8); }"""


def _both_widths(page: Any, name: str) -> None:
    page.set_viewport_size(DESKTOP)
    screenshot(page, f"uncertainty-{name}-desktop")
    page.set_viewport_size(PHONE)
    overflow = page.evaluate(PAGE_OVERFLOW)
    screenshot(page, f"uncertainty-{name}-phone")
    wide = page.evaluate(OVERFLOWING)
    assert overflow <= 0, f"{name}: the page scrolls sideways by {overflow} px at 390 px: {wide}"
    page.set_viewport_size(DESKTOP)


def test_the_uncertainty_pages(staff_page: Any, live_server: Any) -> None:
    world = research_world()
    judge = world["judges"][0]
    errors: list[str] = []
    staff_page.on("pageerror", lambda error: errors.append(str(error)))

    # Leaderboard: separability above the table, a mark against the next generator down, sorted by a click.
    staff_page.goto(f"{live_server.url}/?judge={judge.judge_id}")
    staff_page.get_by_text("separability").first.wait_for()
    assert staff_page.locator("svg.forest .forest-ci").count() >= 4 * 3  # a line and its two ends a row
    staff_page.locator("th", has_text="How2Score").first.get_by_role("link").click()
    staff_page.wait_for_url("**sort=-how2score**")
    assert staff_page.locator("th[aria-sort='descending']").count() == 1
    _both_widths(staff_page, "leaderboard")

    # The mark opens the compare page; a discordant example opens both L2s against the same L1.
    staff_page.goto(f"{live_server.url}/?judge={judge.judge_id}")
    staff_page.locator(".sep-next a").first.click()
    staff_page.wait_for_url("**/compare/**")
    staff_page.get_by_text("discordant").first.wait_for()
    _both_widths(staff_page, "compare")
    first, last = world["generators"][0], world["generators"][1]  # 0 and 3 fail the same examples
    staff_page.goto(
        f"{live_server.url}/compare/?judge={judge.judge_id}&a={first.generator_id}&b={last.generator_id}"
    )
    staff_page.locator("a[href*='/compare/examples/']").first.click()
    staff_page.wait_for_url("**/compare/examples/**")
    staff_page.get_by_text(first.model).first.wait_for()
    _both_widths(staff_page, "compare-example")

    # A judge's report card, with a study the judge judged.
    study = _judged_study(judge)
    staff_page.goto(f"{live_server.url}/judges/{judge.judge_id}/")
    staff_page.get_by_text("Instrument failures").wait_for()
    staff_page.get_by_text(study.title).first.wait_for()
    _both_widths(staff_page, "report-card")

    # A heatmap cell opens the failure browser filtered to it; the browser offers its CSV.
    staff_page.goto(f"{live_server.url}/leaderboard/topics/?judge={judge.judge_id}")
    staff_page.locator("a.heatmap-link").last.click()  # the worst generator: a cell with failures
    staff_page.wait_for_url("**/failures/?topic=**")
    assert "judge=" in staff_page.url and "generator=" in staff_page.url
    csv_link = staff_page.get_by_role("link", name="Download CSV")
    assert "failures.csv?" in (csv_link.get_attribute("href") or "")
    _both_widths(staff_page, "failures-from-heatmap")
    assert not errors, errors


def _judged_study(judge: Any) -> Study:
    """A 4-item study (test_agreement_pages' labels) over a generator the judge judged."""
    from tests.annotation.conftest import make_study

    study = make_study(n_items=4, k=4, slug="card-study", items_per_participant=0)
    annotate(study)
    for item in study.items.select_related("generation"):
        make_judgment(generation=item.generation, judge=judge, failures=[("Misses a step", [1], [1])])
    return study
