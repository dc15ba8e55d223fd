"""Pages in a real browser: login, htmx judge filter, failure-to-step highlights, job polling, API docs."""

from __future__ import annotations

from typing import Any

import pytest

from h2e_site.jobs.models import JobStatus
from judging.job_kinds import JUDGE
from tests.browser.conftest import screenshot
from tests.factories import (
    make_generation,
    make_generator,
    make_job,
    make_judge,
    make_judgment,
    make_procedure,
    make_scored_world,
)

pytestmark = pytest.mark.browser

L1 = [
    "Water the plant a day before repotting so the root ball holds together.",
    "Turn the pot on its side and gently slide the plant out.",
    "Loosen circling roots with your fingers and trim any that are dead.",
    "Put a layer of fresh potting soil in a pot one size larger.",
    "Set the plant at the same depth it grew before and fill around it with soil.",
    "Water thoroughly and keep it out of direct sun for a week.",
]
L2 = [
    "Choose a pot that is much larger than the current one.",
    "Pull the plant out by its stem.",
    "Put the plant in the new pot.",
    "Fill the pot with garden soil and press it down hard.",
    "Place it in full sun and water it lightly.",
]


def repotting_generation() -> Any:
    procedure = make_procedure(
        goal="Repot a root-bound houseplant without shocking it",
        steps=L1,
        resources=["pot one size larger", "fresh potting soil", "pruning scissors"],
        topic="Home & Hobbies",
    )
    generation = make_generation(
        generator=make_generator(model="allenai/OLMo-3-7B-Instruct"), procedure=procedure, predicted_steps=L2
    )
    make_judgment(
        generation=generation,
        judge=make_judge(model="how2everything/how2judge"),
        failures=[
            (
                "Pulling the plant by its stem can tear it; the reference slides it out of the tipped pot.",
                [2],
                [2],
            ),
            (
                "Garden soil pressed down hard suffocates roots; the reference uses fresh potting soil.",
                [4, 5],
                [4],
            ),
            (
                "Full sun right after repotting stresses the plant; the reference keeps it shaded.",
                [6],
                [5],
            ),
            ("The judge cites a step that does not exist.", [9], []),
        ],
        reasoning="The generated procedure misses root care and gives harmful soil and light advice.",
        raw_output='{"critical_failures": [...]}',
    )
    make_judgment(
        generation=generation, judge=make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", is_demo=True)
    )
    return generation


def test_it_logs_in_and_swaps_the_leaderboard_by_judge(staff_page: Any, live_server: Any) -> None:
    world = make_scored_world()
    judge_x, judge_y = world["judges"]
    staff_page.goto(f"{live_server.url}/")  # one judge by default: the real one, not the demo model
    rows = staff_page.locator(".leaderboard-table tbody tr")
    assert rows.count() == 2
    assert judge_y.judge_id not in staff_page.inner_text("#leaderboard")
    screenshot(staff_page, "leaderboard")

    staff_page.select_option("#judge-filter", "all")
    staff_page.wait_for_url("**/?judge=all")
    staff_page.wait_for_function("document.querySelectorAll('.leaderboard-table tbody tr').length === 4")
    assert staff_page.locator(".judge-cell .badge", has_text="demo model").first.is_visible()
    assert staff_page.locator("#judge-filter").count() == 1  # only the table was swapped
    screenshot(staff_page, "leaderboard-all-judges")

    staff_page.select_option("#judge-filter", judge_y.judge_id)
    staff_page.wait_for_url(f"**/?judge={judge_y.judge_id}")
    staff_page.wait_for_function("document.querySelectorAll('.leaderboard-table tbody tr').length === 2")
    assert judge_x.judge_id not in staff_page.inner_text("#leaderboard")
    screenshot(staff_page, "leaderboard-filtered")


def test_it_highlights_the_steps_a_failure_links_to(staff_page: Any, live_server: Any) -> None:
    generation = repotting_generation()
    staff_page.goto(f"{live_server.url}/generations/{generation.pk}/")
    failure = staff_page.locator(".failure").nth(1)  # L1 4, 5 and L2 4
    assert failure.locator(".chip").all_inner_texts() == ["L1 4", "L1 5", "L2 4"]
    assert "out of range" in staff_page.locator(".failure").nth(3).inner_text()

    failure.hover()
    for step in ("#l1-step-4", "#l1-step-5", "#l2-step-4"):
        assert "is-linked" in staff_page.locator(step).get_attribute("class")
    assert "is-linked" not in staff_page.locator("#l1-step-2").get_attribute("class")
    screenshot(staff_page, "generation-hover")

    staff_page.mouse.move(0, 0)
    assert "is-linked" not in staff_page.locator("#l1-step-4").get_attribute("class")
    staff_page.locator(".failure").first.focus()  # keyboard users get the same highlight
    assert "is-linked" in staff_page.locator("#l1-step-2").get_attribute("class")
    assert "is-linked" in staff_page.locator("#l2-step-2").get_attribute("class")


def test_it_shows_a_generator_with_its_verdicts(staff_page: Any, live_server: Any) -> None:
    generation = repotting_generation()
    staff_page.goto(f"{live_server.url}/generators/{generation.generator_id}/")
    assert staff_page.locator(".verdict-fail").inner_text() == "4 failures"
    screenshot(staff_page, "generator")
    staff_page.click("text=Repot a root-bound houseplant")
    staff_page.wait_for_url(f"**/generations/{generation.pk}/")


def test_it_polls_running_jobs_until_they_finish(staff_page: Any, live_server: Any) -> None:
    job = make_job(status=JobStatus.RUNNING, total=200, done=50)
    make_job(status=JobStatus.SUCCEEDED, total=10, done=10)
    make_job(status=JobStatus.FAILED, total=10, done=3, failed=7)
    staff_page.goto(f"{live_server.url}/jobs/")
    screenshot(staff_page, "jobs")
    job.status, job.done = JobStatus.SUCCEEDED, 200
    job.save()
    staff_page.wait_for_function(  # the row is swapped, then the lists reload: it may be gone for a moment
        f"(document.querySelector('#job-{job.pk} .status')?.textContent || '').trim() === 'Succeeded'",
        timeout=8000,
    )
    assert staff_page.locator(f"#job-{job.pk}").get_attribute("hx-trigger") is None
    # the lists reloaded: the finished job has moved from "Running and queued" to "Finished"
    staff_page.wait_for_selector("text=No job is running.", timeout=8000)
    finished = staff_page.locator("h2", has_text="Finished").locator("xpath=following-sibling::div[1]")
    assert finished.locator(f"#job-{job.pk}").count() == 1


def test_it_serves_api_docs_without_external_requests(
    staff_page: Any, live_server: Any, requested_urls: list[str]
) -> None:
    make_scored_world()
    staff_page.goto(f"{live_server.url}/api/docs/")
    staff_page.wait_for_selector(".swagger-ui .opblock", timeout=15_000)
    assert staff_page.locator(".opblock-summary-path", has_text="/api/leaderboard/").count() >= 1
    screenshot(staff_page, "api-docs")
    assert any(url.endswith("/api/schema/") for url in requested_urls)
    assert all(url.startswith(live_server.url) for url in requested_urls)


def test_it_shows_raw_texts_and_the_import_form_in_the_admin(staff_page: Any, live_server: Any) -> None:
    from django.contrib.auth.models import User

    User.objects.filter(username="researcher").update(is_superuser=True)
    generation = repotting_generation()
    judgment = generation.judgments.get(judge__is_demo_model=False)
    staff_page.goto(f"{live_server.url}/admin/judging/judgment/{judgment.pk}/change/")
    assert staff_page.locator("pre", has_text='{"critical_failures": [...]}').count() == 1
    screenshot(staff_page, "admin-judgment")
    staff_page.goto(f"{live_server.url}/admin/jobs/job/")
    staff_page.click("text=Import h2e files")
    staff_page.wait_for_url("**/admin/judging/generator/import/")
    assert staff_page.locator("input[type=file][multiple]").count() == 1
    screenshot(staff_page, "admin-import")


def test_it_sends_anonymous_users_to_login_then_shows_the_empty_state(page: Any, live_server: Any) -> None:
    from tests.browser.conftest import STAFF_PASSWORD
    from tests.factories import make_user

    make_user(username="newcomer", is_staff=True, password=STAFF_PASSWORD)
    page.goto(f"{live_server.url}/")
    page.wait_for_url("**/accounts/login/?next=/")
    screenshot(page, "login")
    page.fill("#id_username", "newcomer")
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_text("No judgments yet").is_visible()
    screenshot(page, "leaderboard-empty")


# --- Issue #3: watching runs and per-generator metrics (helper F) ---


def _running_judge_job(*, total: int = 120, done: int = 45, failed: int = 3) -> Any:
    """A judge job row as a worker leaves it mid-run (made directly: no task is enqueued)."""
    import datetime

    from django.utils import timezone

    from h2e_site.jobs.models import Job

    generator = make_generator(model="allenai/OLMo-3-7B-Instruct")
    judge = make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", is_demo=True)
    return Job.objects.create(
        kind=JUDGE,
        status=JobStatus.RUNNING,
        total=total,
        done=done,
        failed=failed,
        started_at=timezone.now() - datetime.timedelta(seconds=96),
        parameters={
            "judge": judge.pk,
            "judge_id": judge.judge_id,
            "generator": generator.pk,
            "generator_id": generator.generator_id,
            "mode": "missing",
            "items": list(range(1, total + 1)),
            "errors": ["item 17: HTTP 500 after 6 attempts"],
        },
    )


def _allow_runs(username: str = "researcher") -> None:
    from django.contrib.auth.models import Permission, User

    User.objects.get(username=username).user_permissions.add(Permission.objects.get(codename="add_job"))


def test_it_keeps_a_running_jobs_row_and_updates_it_for_ten_seconds(
    staff_page: Any, live_server: Any
) -> None:
    """#31 item 3: each row's poll inherited the lists' hx-select="#job-lists", so its answer (one row)
    swapped in nothing and the row vanished from "Running and queued" on its first poll, 2 s after loading."""
    from h2e_site.jobs.models import Job

    job = _running_judge_job(total=120, done=40)
    staff_page.goto(f"{live_server.url}/jobs/")
    row = f"#job-lists #job-{job.pk}"
    for second in range(1, 11):
        Job.objects.filter(pk=job.pk).update(done=40 + 6 * second)  # a worker's progress, once a second
        staff_page.wait_for_timeout(1000)
        assert staff_page.locator(row).count() == 1, f"the running job's row is gone after {second} s"
    staff_page.wait_for_function(  # the last progress reached the row: it is still polled, not a stale copy
        f"document.querySelector('{row} progress')?.getAttribute('value') === '86'", timeout=4000
    )
    assert staff_page.locator(row).get_attribute("hx-trigger") == "every 2s"
    assert "100 / 120" in staff_page.locator(row).inner_text()


def test_it_shows_a_running_jobs_progress_and_cancels_it(staff_page: Any, live_server: Any) -> None:
    _allow_runs()
    job = _running_judge_job()
    make_job(status=JobStatus.SUCCEEDED, total=10, done=10)
    staff_page.goto(f"{live_server.url}/jobs/")
    row = staff_page.locator(f"#job-{job.pk}")
    assert row.locator("progress").get_attribute("value") == "40"
    assert "45 / 120" in row.inner_text() and "3 failed" in row.inner_text()
    assert "ETA" in row.inner_text() and row.locator(".badge-warn").inner_text() == "demo model"
    screenshot(staff_page, "jobs-running")

    staff_page.click(f"#job-{job.pk} a[href='/jobs/{job.pk}/']")
    staff_page.wait_for_url(f"**/jobs/{job.pk}/")
    assert staff_page.locator("#job-panel").get_attribute("hx-trigger") == "every 2s"
    assert staff_page.get_by_text("item 17: HTTP 500 after 6 attempts").is_visible()
    screenshot(staff_page, "job-detail-running")
    job.done = 57
    job.save()
    staff_page.wait_for_function(
        f"document.querySelector('#job-{job.pk} progress').getAttribute('value') === '50'", timeout=8000
    )
    staff_page.on("dialog", lambda dialog: dialog.accept())
    staff_page.click("#job-panel .job-actions button:has-text('Cancel job')")
    staff_page.wait_for_function(
        f"document.querySelector('#job-{job.pk} .status').textContent.trim() === 'Cancelled'", timeout=8000
    )
    assert staff_page.locator("#job-panel").get_attribute("hx-trigger") is None
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    screenshot(staff_page, "job-detail-cancelled")


def test_it_shows_per_generator_metrics_on_the_leaderboard(staff_page: Any, live_server: Any) -> None:
    from judging.metrics import metrics_backfill
    from judging.models import Generation

    generation = repotting_generation()
    verbose = make_generator(model="Qwen/Qwen3-8B")
    make_judgment(
        generation=make_generation(
            generator=verbose,
            procedure=generation.procedure,
            predicted_steps=[f"{step} Take your time and be careful while doing it." for step in L1]
            + [L1[0]],
        ),
        judge=generation.judgments.get(judge__is_demo_model=False).judge,
    )
    Generation.objects.update(n_tokens=None)
    staff_page.goto(f"{live_server.url}/")
    assert not staff_page.locator(".hint-box", has_text="compute_metrics").is_visible()  # behind the toggle
    staff_page.check("#more-columns")
    assert staff_page.locator(".hint-box", has_text="compute_metrics").is_visible()
    metrics_backfill()
    staff_page.reload()
    staff_page.check("#more-columns")
    assert staff_page.locator(".hint-box", has_text="compute_metrics").count() == 0
    rows = staff_page.locator(".leaderboard-table tbody tr")
    text = rows.all_inner_texts()
    assert any("of ref" in t and "steps ≠ ref" in t for t in text)
    assert staff_page.locator("#metrics-legend", has_text="verbosity bias").is_visible()
    screenshot(staff_page, "leaderboard-metrics")
