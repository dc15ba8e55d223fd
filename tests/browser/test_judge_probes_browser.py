"""Judge probes (#32 item 5) in Chromium at 1440 and 390 px: the form starts a probe, its page shows the job's
row while it runs and the figures once it has finished (the body reloads by itself), the list of probes and
the report card's "Judge probes" section. Screenshots: test-artifacts/screenshots/probes/*.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judging.models import JudgeProbe
from judging.probes.jobs import judge_probe_create, judge_probe_job_run
from tests.browser.conftest import DESKTOP, PHONE, SCREENSHOTS, STAFF_PASSWORD, both_widths
from tests.factories import make_runner
from tests.judging.test_judge_probes import (
    generations,
    loopback_judge,
    misses_a_step,
    rewriter_file,
    verbose_world,
)
from tests.llm_server import LoopbackLLM, judge_json

pytestmark = pytest.mark.browser


def both(body: dict[str, Any]) -> str:
    """The verbose world's rewriter, and a judge that fails an L2 for being terse (the verbose world's) and
    for each step it misses: one failure for each."""
    answer = verbose_world(body)
    if not answer.startswith("{"):
        return answer  # a rewrite
    failures = [json.loads(text)["critical_failures"] for text in (answer, misses_a_step(body))]
    return judge_json([*failures[0], *failures[1]])


def log_in(page: Any, live_server: Any) -> None:
    make_runner(username="prober", password=STAFF_PASSWORD)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "prober")
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_a_probe_is_started_followed_and_read(
    page: Any, live_server: Any, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = both
    judge = loopback_judge(llm_server)
    generator, _ = generations(6)
    verbose = judge_probe_create(
        judge=judge, generator=generator, kind="verbose", n=6, seed=2,
        rewriter_config=rewriter_file(llm_server, tmp_path), enqueue=False,
    )  # fmt: skip
    judge_probe_job_run(job_id=verbose.job_id)
    log_in(page, live_server)

    page.goto(f"{live_server.url}/probes/")
    page.click("summary:has-text('Start a judge probe')")
    page.select_option("#id_judge", f"judge:{judge.pk}")
    page.select_option("#id_generator", str(generator.pk))
    page.select_option("#id_kind", "delete_step")
    page.fill("#id_n", "40")  # more than there are: refused, naming the field
    page.click("button:has-text('Start the probe')")
    assert "at most 6" in page.locator(".has-error").inner_text()
    both_widths(page, "probes/form-refused")
    page.fill("#id_n", "5")
    page.click("button:has-text('Start the probe')")

    probe = JudgeProbe.objects.exclude(pk=verbose.pk).get()
    page.wait_for_url(f"{live_server.url}/probes/{probe.pk}/")
    assert page.locator(f"#job-{probe.job_id}").count() == 1  # the job's row, polling
    judge_probe_job_run(job_id=probe.job_id)  # the worker's part, here
    page.locator("[data-figure='detection']").filter(has_text="5 of 5 detected").wait_for(timeout=15_000)
    assert page.locator("tr[data-item]").count() == 5
    both_widths(page, "probes/probe-delete")

    page.goto(f"{live_server.url}/probes/{verbose.pk}/")
    change = page.locator("[data-figure='change']").inner_text()
    assert change.startswith("+1.000") and "0.000 → 1.000" in change
    both_widths(page, "probes/probe-verbose")

    page.goto(f"{live_server.url}/probes/")
    assert page.locator("tr[data-probe]").count() == 2
    both_widths(page, "probes/list")

    page.goto(f"{live_server.url}/judges/{judge.judge_id}/")
    section = page.locator("section[aria-labelledby='probes-h']")
    assert section.locator("tr[data-probe]").count() == 2
    both_widths(page, "probes/report-card")
    for size, label in ((DESKTOP, "desktop"), (PHONE, "phone")):  # the section alone, to read
        page.set_viewport_size(size)
        section.screenshot(path=str(SCREENSHOTS / f"probes/report-card-section-{label}.png"))
