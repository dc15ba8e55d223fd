"""The pages of #19 item 15 in Chromium at 1,440 and 390 px, measured (screenshots in
test-artifacts/screenshots/widths-*.png): the leaderboard fits 1,440 px without scrolling sideways, even with
every column and every judge, and shows How2Score and its interval on a phone; the topic heatmap, /compare/
and the jobs pages do not widen a phone's page, the heatmap's judge menu stays readable, the jobs' status is
on screen; a step-types candidate row stays short in the phone's column layout."""

from __future__ import annotations

import re
from typing import Any

import pytest

from h2e_site.jobs.models import Job, JobStatus
from judging.job_kinds import IMPORT, JUDGE
from tests.annotation.step_types.test_browser import make_patch_study, qualify, read_all
from tests.browser.conftest import BOX_OVERFLOW, DESKTOP, PAGE_OVERFLOW, PHONE, screenshot
from tests.browser.test_research_pages_browser import research_world

pytestmark = pytest.mark.browser

# The boxes of the elements matched, as [left, right, width, height] (visible ones only).
BOXES = """(selector) => Array.from(document.querySelectorAll(selector))
  .map(el => el.getBoundingClientRect()).filter(r => r.width > 0)
  .map(r => [Math.round(r.left), Math.round(r.right), Math.round(r.width), Math.round(r.height)])"""


HEADER_WIDTHS = """() => Array.from(document.querySelectorAll('.leaderboard-table thead th'))
  .filter(th => th.offsetWidth).map(th => th.textContent.trim().slice(0, 12) + ' ' + th.offsetWidth)"""


def _table_fits(page: Any, name: str) -> None:
    """The leaderboard's table needs no sideways scrolling of its box."""
    overflow = page.evaluate(BOX_OVERFLOW, "#leaderboard .table-wrap")
    widths = page.evaluate(HEADER_WIDTHS)
    assert overflow <= 0, f"{name}: the table scrolls sideways by {overflow} px: {widths}"


def _no_page_overflow(page: Any, name: str) -> None:
    overflow = page.evaluate(PAGE_OVERFLOW)
    assert overflow <= 0, (
        f"{name}: the page scrolls sideways by {overflow} px at {page.viewport_size['width']}"
    )


def _on_screen(page: Any, selector: str, name: str) -> list[list[int]]:
    """Every element matched lies inside the viewport's width (not cut off, not behind a scroll)."""
    width = page.viewport_size["width"]
    boxes = page.evaluate(BOXES, selector)
    assert boxes, f"{name}: nothing matches {selector}"
    for left, right, _, _ in boxes:
        assert left >= 0 and right <= width, (
            f"{name}: {selector} at {left}-{right} px, off a {width} px screen"
        )
    return boxes


def _both_widths(page: Any, url: str, name: str) -> None:
    page.set_viewport_size(DESKTOP)
    page.goto(url)
    _no_page_overflow(page, name)
    screenshot(page, f"widths-{name}-1440")
    page.set_viewport_size(PHONE)
    page.goto(url)
    _no_page_overflow(page, name)
    screenshot(page, f"widths-{name}-390")


def test_the_leaderboard_fits_1440_px_and_shows_how2score_on_a_phone(
    staff_page: Any, live_server: Any
) -> None:
    research_world()
    errors: list[str] = []
    staff_page.on("pageerror", lambda error: errors.append(str(error)))
    base = live_server.url

    staff_page.set_viewport_size(DESKTOP)
    staff_page.goto(f"{base}/")  # How2Judge's four generators, one forest plot row each
    assert "how2everything/how2judge" in staff_page.locator(".judged-by").inner_text()
    assert staff_page.locator("svg.forest").count() == 4
    _table_fits(staff_page, "leaderboard")
    _no_page_overflow(staff_page, "leaderboard")
    assert not staff_page.locator("th.col-more").first.is_visible()
    screenshot(staff_page, "widths-leaderboard-1440")
    staff_page.check("#more-columns")  # the secondary columns: still no sideways scrolling
    assert staff_page.locator("th.col-more").first.is_visible()
    _table_fits(staff_page, "leaderboard, every column")
    screenshot(staff_page, "widths-leaderboard-all-columns-1440")
    staff_page.select_option("#judge-filter", "all")  # every judge, the toggle kept across the swap
    staff_page.wait_for_url("**/?judge=all")
    staff_page.wait_for_function("document.querySelectorAll('svg.forest').length === 10")
    assert staff_page.is_checked("#more-columns")
    _table_fits(staff_page, "leaderboard, every judge and column")
    _no_page_overflow(staff_page, "leaderboard, every judge and column")
    badges = staff_page.evaluate(BOXES, ".judge-cell .badge")
    assert badges and all(height < 24 for *_, height in badges), f"the demo badge wraps: {badges}"
    screenshot(staff_page, "widths-leaderboard-all-judges-1440")

    for path, name in (("/", "leaderboard"), ("/?judge=all", "leaderboard-all-judges")):
        staff_page.set_viewport_size(PHONE)
        staff_page.goto(f"{base}{path}")
        _no_page_overflow(staff_page, name)
        _on_screen(staff_page, ".score-value", name)
        forests = _on_screen(staff_page, "svg.forest", name)
        assert all(width >= 200 for _, _, width, _ in forests), f"{name}: a squeezed forest plot {forests}"
        _on_screen(staff_page, "#judge-filter", name)
        screenshot(staff_page, f"widths-{name}-390")
    assert not errors, errors


def _researcher() -> Any:
    from django.contrib.auth.models import User

    return User.objects.get(username="researcher")


def test_the_heatmap_compare_and_jobs_pages_fit_a_phone(staff_page: Any, live_server: Any) -> None:
    world = research_world()
    judge, (a, b) = world["judges"][0], world["generators"][:2]
    base = live_server.url

    _both_widths(staff_page, f"{base}/leaderboard/topics/", "heatmap")
    menu = staff_page.locator("#heatmap-judge").bounding_box()
    assert menu is not None and menu["width"] >= 200, f"the judge menu is squeezed: {menu}"
    _on_screen(staff_page, ".chart-wrap", "heatmap")
    staff_page.set_viewport_size(DESKTOP)
    staff_page.reload()
    assert staff_page.evaluate(BOX_OVERFLOW, ".chart-wrap") <= 0  # the whole heatmap on a laptop

    _both_widths(
        staff_page, f"{base}/compare/?judge={judge.judge_id}&a={a.generator_id}&b={b.generator_id}", "compare"
    )
    _on_screen(staff_page, ".discordant-table .verdict", "compare")

    Job.objects.create(kind=IMPORT, status=JobStatus.RUNNING, total=10, done=4, parameters={})
    failed = Job.objects.create(
        kind=JUDGE,
        status=JobStatus.FAILED,
        total=60,
        done=12,
        failed=48,
        parameters={"judge": world["judges"][2].pk},
        error="Connection refused: http://127.0.0.1:8080/v1/chat/completions " * 3,
    )
    Job.objects.create(
        kind=JUDGE, status=JobStatus.SUCCEEDED, total=60, done=60, parameters={}, created_by=_researcher()
    )
    _both_widths(staff_page, f"{base}/jobs/", "jobs")
    statuses = _on_screen(staff_page, ".jobs-table .status", "jobs")
    assert len(statuses) == 3
    created = staff_page.locator(".jobs-table .job-created", has_text="researcher").inner_text()
    assert re.fullmatch(r"\S.*\S\s+by researcher", created), created  # #31 item 8: not "agoby researcher"
    _both_widths(staff_page, f"{base}/jobs/{failed.pk}/", "job-detail")
    _on_screen(staff_page, ".jobs-table .status", "job detail")
    _phone_navigation_folds(staff_page)

    # #31 item 8: the per-topic bars and their counts stay inside their card on a phone
    staff_page.goto(f"{base}/failures/")
    overflow = staff_page.evaluate(BOX_OVERFLOW, ".failure-counts .chart-wrap")
    assert overflow <= 0, f"the per-topic bars run {overflow} px past their card"
    counts = _on_screen(staff_page, ".topic-bar-value", "failures")
    assert [int(n) for n in staff_page.locator(".topic-bar-value").all_inner_texts()] == [19, 16, 16, 13, 13]
    assert len(counts) == 5

    # a table wider than the phone shows its hidden columns' edge: shades drawn by the box's background
    staff_page.goto(f"{base}/generators/{a.pk}/")
    assert staff_page.evaluate(BOX_OVERFLOW, ".table-wrap") > 0
    shades = staff_page.evaluate(
        "getComputedStyle(document.querySelector('.table-wrap')).backgroundImage.split('gradient').length - 1"
    )
    assert shades == 4, f"the wide table has {shades} gradients: no sign of its hidden columns"


def _phone_navigation_folds(page: Any) -> None:
    """#31 item 8: at 390 px the navigation took four rows; it folds under a Menu button, which opens it."""
    bar = page.locator(".topbar").bounding_box()
    assert bar is not None and bar["height"] <= 70, f"the top bar is {bar} at 390 px"
    assert not page.locator("#main-nav").is_visible()
    page.locator(".nav-toggle").click()
    assert page.locator("#main-nav a", has_text="Jobs").is_visible()
    assert page.locator(".nav-toggle").get_attribute("aria-expanded") == "true"
    page.locator(".nav-toggle").click()
    assert not page.locator("#main-nav").is_visible()


def test_a_step_types_candidate_row_stays_short_on_a_phone(
    browser: Any, live_server: Any, transactional_db: None
) -> None:
    study = make_patch_study()
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        qualify(page, live_server, study)
        read_all(page)
        page.get_by_label("At step 2: step 3").check()  # a marked row shows its expert question too
        rows = page.evaluate(BOXES, ".candidate")
        assert len(rows) == 13
        tallest = max(height for *_, height in rows)
        assert tallest <= 140, f"a candidate row is {tallest} px tall at 390 px"
        _no_page_overflow(page, "step-types item")
        screenshot(page, "widths-step-types-item-390")
    finally:
        context.close()
