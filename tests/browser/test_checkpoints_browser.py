"""A run's checkpoints on the benchmark (#32 item 4) in Chromium at 1440 and 390 px: the table (Table 2's
layout) with the external judge chosen on the page (htmx swaps the table and the URL keeps the choice), its
shaded-edge scroll on a phone, an OOD file refused by line and field then imported, and a config path refused
by the register form. Screenshots: test-artifacts/screenshots/checkpoints/*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judging.training.checkpoint_models import OODResult
from tests.browser.conftest import BOX_OVERFLOW, PHONE, STAFF_PASSWORD, both_widths
from tests.factories import make_runner
from tests.judging.test_checkpoints import make_world

pytestmark = pytest.mark.browser


def log_in(page: Any, live_server: Any) -> None:
    make_runner(username="trainer", password=STAFF_PASSWORD)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "trainer")
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_the_checkpoint_table_is_read_and_fed(page: Any, live_server: Any, tmp_path: Path) -> None:
    world = make_world()
    run, external = world["run"], world["external"]
    log_in(page, live_server)
    url = f"{live_server.url}/training/runs/{run.name}/checkpoints/"
    page.goto(url)
    rows = page.locator(".checkpoint-table tbody tr")
    assert rows.count() == 3 and "+46.67" in rows.nth(1).inner_text()
    assert page.locator(".checkpoint-table .external-col").count() == 0

    page.select_option("select[name=external]", external.judge_id)  # htmx: the table only
    page.locator(".checkpoint-table .external-col").wait_for()
    assert f"external={external.judge_id}" in page.url
    last = rows.nth(2).inner_text()
    assert "100.00" in last and "+50.00" in last and "+0.74" in last
    assert page.locator(".delta-down").count() >= 1 and page.locator(".delta-up").count() >= 1
    both_widths(page, "checkpoints/table")
    page.set_viewport_size(PHONE)
    assert page.evaluate(BOX_OVERFLOW, ".checkpoint-table-wrap") > 0  # the table scrolls in its box
    page.set_viewport_size({"width": 1440, "height": 900})

    bad = tmp_path / "ood.csv"
    bad.write_text("benchmark,checkpoint,score\nHumanEval+,0,71.95\nHumanEval+,+RL,seventy\n")
    page.set_input_files("#import-ood input[type=file]", str(bad))
    page.click("#import-ood button[type=submit]")
    error = page.locator("#import-ood .alert-error")
    assert (
        "line 3, score: must be a number" in error.inner_text()
        and not OODResult.objects.filter(benchmark="HumanEval+").exists()
    )
    assert page.locator(".checkpoint-table .external-col").count() == 1
    both_widths(page, "checkpoints/ood-refused")
    bad.write_text("benchmark,checkpoint,score\nHumanEval+,0,71.95\nHumanEval+,+RL,75.43\n")
    page.set_input_files("#import-ood input[type=file]", str(bad))
    page.click("#import-ood button[type=submit]")
    page.locator(".message-success").wait_for()
    assert "HumanEval+" in page.locator(".checkpoint-table thead").text_content()
    assert f"external={external.judge_id}" in page.url  # the page kept the judges it showed

    page.fill("#register-checkpoint input[name=step]", "2000")
    page.fill("#register-checkpoint input[name=config]", "configs/generators/missing.yaml")
    page.click("#register-checkpoint button[type=submit]")
    assert (
        "configs/generators/missing.yaml: no such file" in page.locator("#register-checkpoint").inner_text()
    )
    both_widths(page, "checkpoints/register-refused")
