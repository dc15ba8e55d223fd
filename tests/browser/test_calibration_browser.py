"""The study builder's calibration sample and a calibration study's page in Chromium at 1,440 and 390 px
(screenshots in test-artifacts/screenshots/calibration-*.png): a refusal shown on its field, a disagreement
sample built, its section on the study page (design, frame, rounds, the range of pi) and the next round
drawn from the page's form; neither page scrolls sideways on a phone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.models import CalibrationRound
from tests.browser.conftest import DESKTOP, PHONE, SCREENSHOTS, both_widths, screenshot
from tests.browser.test_page_widths_browser import _no_page_overflow
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.browser


def _world() -> tuple[Any, Any, Any]:
    generator = make_generator(model="model-under-test")
    a, b = make_judge(model="judge-a"), make_judge(model="judge-b")
    for i in range(12):
        topic = ["Health", "Home & Hobbies", "Cars"][i % 3]
        generation = make_generation(
            generator=generator, procedure=make_procedure(goal=f"Goal {i}", topic=topic)
        )
        make_judgment(generation=generation, judge=a, failures=[("Skips a step", [1], [1])] if i < 3 else ())
        make_judgment(generation=generation, judge=b)
    return generator, a, b


def _fill_builder(page: Any, generator: Any, a: Any, b: Any) -> None:
    page.fill("#id_title", "Calibration of model-under-test")
    page.fill("#id_slug", "calibration")
    page.select_option("#id_generators", [str(generator.pk)])
    page.select_option("#id_calibration_design", "disagreement")
    page.select_option("#id_calibration_judges", [str(a.pk), str(b.pk)])
    page.fill("#id_sample_size", "4")


def test_a_calibration_sample_is_built_and_grows_in_rounds(
    staff_page: Any, live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator, a, b = _world()
    page = staff_page
    for viewport, width in ((DESKTOP, 1440), (PHONE, 390)):
        page.set_viewport_size(viewport)
        page.goto(f"{live_server.url}/studies/new/?kind=critical_failures")
        assert page.locator("#id_calibration_design").is_visible()
        _no_page_overflow(page, f"builder {width}")
        _fill_builder(page, generator, a, b)
        page.locator("input[name=topics]").first.check()  # a topic filter: refused on its field
        page.click("button:has-text('Create study')")
        error = page.locator(".form-row.has-error, fieldset.has-error").first
        assert "stratified by topic" in error.inner_text()
        error.scroll_into_view_if_needed()
        screenshot(page, f"calibration-builder-refused-{width}")
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/studies/new/?kind=critical_failures")
    _fill_builder(page, generator, a, b)
    page.click("button:has-text('Create study')")
    page.wait_for_url(f"{live_server.url}/studies/calibration/")
    section = page.locator("#calibration")
    assert "frame: 12 generations" in section.inner_text() and a.judge_id in section.inner_text()
    screenshot(page, "calibration-study-1440")
    page.fill("#id_size", "3")
    page.fill("#id_seed", "7")
    page.click("button:has-text('Draw round 2')")
    page.wait_for_url(f"{live_server.url}/studies/calibration/#calibration")
    rows = page.locator("#calibration table tbody tr")
    assert rows.count() == 2 and "disagreement" in rows.nth(1).inner_text()
    study = Study.objects.get(slug="calibration")
    assert list(study.calibration_rounds.values_list("number", flat=True)) == [1, 2]
    page.set_viewport_size(PHONE)
    page.reload()
    _no_page_overflow(page, "study page 390")
    screenshot(page, "calibration-study-390")
    page.locator("#calibration").screenshot(path=str(SCREENSHOTS / "calibration-section-390.png"))
    page.fill("#id_size", "0")
    page.eval_on_selector(".round-form", "form => { form.noValidate = true; }")  # the server's refusal
    page.click("button:has-text('Draw round 3')")
    assert "greater than or equal to 1" in page.locator(".round-form .has-error").inner_text()
    assert CalibrationRound.objects.filter(study=study).count() == 2

    # A frame larger than ROUND_JOB_FRAME: the round is a job, with its live row in the section (#31 item 22).
    monkeypatch.setattr(calibration_sample, "ROUND_JOB_FRAME", 5)
    researcher = get_user_model().objects.get(username="researcher")
    add_job = Permission.objects.get(codename="add_job", content_type__app_label="jobs")
    researcher.user_permissions.add(add_job)
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/studies/calibration/")
    assert "the round is drawn by a job" in page.locator("#calibration").inner_text()
    page.fill("#id_size", "2")
    page.click("button:has-text('Draw round 3')")
    page.wait_for_url(f"{live_server.url}/studies/calibration/#calibration")
    row = page.locator("#calibration .jobs-table tr.job-row")
    assert row.count() == 1 and "Calibration round" in row.inner_text()
    assert CalibrationRound.objects.filter(study=study).count() == 2  # drawn by the job, not the request
    page.locator("#calibration").scroll_into_view_if_needed()
    both_widths(page, "calibration-round-job")
