"""The adjudication queue and an item's page in Chromium at 1440 and 390 px: labels side by side under the
L1/L2 with a failure's linked steps highlighted, the gold form (a failure added and removed, a verdict sent
twice refused), the decision and its undo."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.kinds.critical_failures.gold import gold_items
from annotation.kinds.critical_failures.models import GoldEvent
from tests.annotation.test_adjudication import labelled
from tests.browser.conftest import both_widths
from tests.factories import make_judge, make_judgment

pytestmark = pytest.mark.browser
TWICE = """() => {
    const twice = Object.assign(document.createElement("input"), {type: "hidden", name: "has_failure"});
    twice.value = "yes";
    document.querySelector("#has-failure").form.append(twice);
}"""


def test_the_review_queue_and_a_decision(staff_page: Any, live_server: Any) -> None:
    study, items = labelled({0: [True, False, False], 1: [True, True, False], 2: [False, False, False]})
    judge = make_judge(model="judge-a")
    make_judgment(generation=items[0].generation, judge=judge, failures=[("Adds a rinse.", [3], [4])])
    make_judgment(generation=items[2].generation, judge=judge)
    page = staff_page
    page.goto(f"{live_server.url}/studies/{study.slug}/adjudication/")
    page.get_by_role("heading", name="Adjudication queue").wait_for()
    assert page.locator(".queue-table tbody tr").count() == 2
    both_widths(page, "adjudication/queue")

    page.get_by_role("link", name="Decide", exact=True).first.click()
    page.get_by_role("heading", name="Set the gold").wait_for()
    judge_failure = page.locator('section[aria-label="The judges\' verdicts"] .failure').first
    judge_failure.hover()
    assert "is-linked" in (page.locator(f"#g{items[0].generation_id}-l2-step-4").get_attribute("class") or "")
    both_widths(page, "adjudication/item")

    # #31 item 17: a verdict sent twice with different values (a tampered form) is refused, nothing recorded
    page.select_option("#has-failure", "no")
    page.fill("#reason", "Sent twice.")
    page.evaluate(TWICE)
    page.get_by_role("button", name="Set gold and go to the next open item").click()
    page.get_by_text("has_failure: 'no,yes' is not one answer").first.wait_for()
    assert not GoldEvent.objects.exists()
    both_widths(page, "adjudication/item-sent-twice")

    page.select_option("#has-failure", "yes")
    page.fill("#failure-0-description", "Step 4 adds a rinse that L1 does not ask for.")
    page.locator("input[name='failure-0-l2'][value='4']").check(force=True)
    page.click("#add-failure")
    assert page.locator("#failure-entries > li").count() == 3
    page.locator("#failure-entries > li").last.get_by_role(
        "button", name="Remove this critical failure"
    ).click()
    assert page.locator("#failure-entries > li").count() == 2
    page.fill("#reason", "The judge is right: the rinse is an extra action.")
    page.get_by_role("button", name="Set gold and go to the next open item").click()
    page.get_by_text("gold set to a critical failure").wait_for()
    assert gold_items(study)[items[0].pk].failures[0].l2_steps == [4]

    page.goto(f"{live_server.url}/judges/{judge.judge_id}/")
    gold_table = page.locator(".report-gold").first
    gold_table.wait_for()
    assert "This judge, with gold" in gold_table.inner_text()
    gold_table.scroll_into_view_if_needed()
    both_widths(page, "adjudication/report-card")

    page.goto(f"{live_server.url}/studies/{study.slug}/adjudication/?show=decided")
    page.get_by_role("link", name="Review", exact=True).first.click()
    page.get_by_role("heading", name="Change the gold").wait_for()
    both_widths(page, "adjudication/decided-item")
    page.get_by_text("Undo this decision").click()
    page.locator(".undo-form input[name=reason]").fill("Decided too fast.")
    page.locator(".undo-form button").click()
    page.get_by_text("Undone: the item has no gold again.").wait_for()
    assert items[0].pk not in gold_items(study)
    assert GoldEvent.objects.count() == 2
