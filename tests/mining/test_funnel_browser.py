"""The funnel page and its drill-down in headless Chromium, with screenshots (test-artifacts/screenshots/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import Permission, User

from mining import forms
from mining.config import run_config_from_mapping
from mining.models import MiningRun, Procedure, Split
from mining.runs import mine_job_run, mining_run_create
from tests.browser.conftest import BOX_OVERFLOW, PAGE_OVERFLOW, PHONE, both_widths, screenshot
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.browser

MARKERS = ["", "NOPROC", "GARBLE", "FEWSTEPS", "REPEAT", "BRAND", "FINALNO", "", "", "REPEAT"]
TOPICS = ["Food & Dining", "Health", "Travel & Tourism"]


def test_it_shows_the_funnel_and_the_rejected_documents(
    staff_page: Any, live_server: Any, llm_server: LoopbackLLM
) -> None:
    for i, marker in enumerate(MARKERS):
        make_document(f"web-{i:02d}", marker, topic=TOPICS[i % 3])
    llm_server.responder = canned_responder
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config(llm_server.base_url)), enqueue=False
    )
    mine_job_run(job_id=run.job_id or 0)

    staff_page.goto(f"{live_server.url}/admin/mining/miningrun/{run.pk}/funnel/")
    staff_page.wait_for_selector("table.funnel-table")
    total = staff_page.locator("tfoot tr.funnel-total")
    assert "All topics" in total.inner_text()
    assert "80.00%" in total.locator("td[data-stage=extraction]").inner_text()  # 8 of 10 extracted
    screenshot(staff_page, "mining-funnel")

    total.locator("td[data-stage=prefilter] a").click()
    staff_page.wait_for_selector("table.rejections-table")
    text = staff_page.locator("#rejections").inner_text()
    assert "3 documents rejected" in text
    assert "2-gram repetition 0.833 >= 0.40" in text and "3 steps, outside 5-15" in text
    screenshot(staff_page, "mining-rejections")


def test_it_shows_a_second_run_of_reused_answers_and_a_final_pass_not_stored(
    staff_page: Any, live_server: Any, llm_server: LoopbackLLM
) -> None:
    for i, marker in enumerate(MARKERS):
        make_document(f"web-{i:02d}", marker, topic=TOPICS[i % 3])
    Procedure.objects.create(source_example_id="web-07", goal="Imported goal", steps=["a"], split=Split.BENCH)
    llm_server.responder = canned_responder
    config = run_config_from_mapping(loopback_config(llm_server.base_url))
    mine_job_run(job_id=mining_run_create(config=config, enqueue=False).job_id or 0)
    sent = len(llm_server.completion_requests)
    run = mining_run_create(config=config, enqueue=False)
    mine_job_run(job_id=run.job_id or 0)
    assert len(llm_server.completion_requests) == sent

    staff_page.goto(f"{live_server.url}/admin/mining/miningrun/{run.pk}/funnel/")
    stored = staff_page.locator(".funnel-bars li.funnel-stored").inner_text()
    assert "Procedures stored" in stored and "2 (20.0%)" in stored  # web-00 and web-08; web-07 not stored
    notice = staff_page.locator(".funnel-unstored").inner_text()
    assert "1 final pass not stored" in notice and "web-07" in notice and "split bench" in notice
    costs = staff_page.locator("tfoot tr.funnel-stage-cost td[data-stage=extraction]").inner_text()
    assert "10 reused" in costs  # every extraction answer, the unparsable one too
    screenshot(staff_page, "mining-funnel-reused-desktop")
    staff_page.set_viewport_size(PHONE)
    overflow = staff_page.evaluate(PAGE_OVERFLOW)
    screenshot(staff_page, "mining-funnel-reused-phone")
    assert overflow <= 0, f"the funnel scrolls sideways by {overflow} px at 390 px"


def test_it_mines_from_the_page_and_the_run_page_follows_the_job(
    staff_page: Any,
    live_server: Any,
    llm_server: LoopbackLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#31 item 7: Mining in the navigation, a run started from its form, the run's page showing the job's
    live row and then, without a reload, per stage what entered, passed and was dropped and why."""
    for i, marker in enumerate(MARKERS):
        make_document(f"web-{i:02d}", marker, topic=TOPICS[i % 3])
    User.objects.get(username="researcher").user_permissions.add(
        Permission.objects.get(content_type__app_label="jobs", codename="add_job")
    )
    llm_server.responder = canned_responder
    (tmp_path / "loopback.yaml").write_text(yaml.safe_dump(loopback_config(llm_server.base_url)))
    monkeypatch.setattr(forms, "CONFIG_DIR", tmp_path)

    staff_page.get_by_role("navigation", name="Main").get_by_role("link", name="Mining").click()
    staff_page.wait_for_selector("form.mine-form")
    assert "10 documents imported, in 3 topics." in staff_page.locator("[data-documents]").inner_text()
    both_widths(staff_page, "mining-mine-page")
    staff_page.fill("#id_name", "from the browser")
    staff_page.get_by_role("button", name="Mine").click()
    staff_page.wait_for_selector("tr.job-row")
    run = MiningRun.objects.get(name="from the browser")
    assert "Queued" in staff_page.locator(f"#job-{run.job_id}").inner_text()

    mine_job_run(job_id=run.job_id or 0)  # the worker's part
    staff_page.wait_for_selector("#run-body:not([hx-trigger*=every])", timeout=15_000)
    extraction = staff_page.locator("li[data-stage=extraction]").inner_text()
    assert "10 entered" in extraction and "8 passed" in extraction and "2 dropped" in extraction
    assert "no valid process in the document" in extraction and "unparsable output" in extraction
    assert "Named-entity focused" in staff_page.locator("li[data-stage=filter]").inner_text()
    assert "Succeeded" in staff_page.locator(f"#job-{run.job_id}").inner_text()
    both_widths(staff_page, "mining-run-page")
    staff_page.get_by_role("link", name="All mining runs").click()
    assert "Succeeded" in staff_page.locator(f"tr[data-run='{run.pk}']").inner_text()
    both_widths(staff_page, "mining-runs-list")
    staff_page.set_viewport_size(PHONE)
    assert staff_page.evaluate(BOX_OVERFLOW, ".mining-runs") <= 0  # no column hidden on a phone
