"""Jobs pages: running and finished jobs, progress/elapsed/ETA, htmx polling that stops, cancel and retry
buttons (POST, CSRF, permission), links to the generator/judge/leaderboard; leaderboard metric columns."""

from __future__ import annotations

import csv
import datetime
import io
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from h2e_site.jobs.models import Job, JobStatus
from h2e_site.web import format_duration
from judging.generate_jobs import generate_job_create
from judging.job_kinds import GENERATE
from judging.judge_jobs import judge_job_create
from judging.metrics import compute_generation_metrics
from judging.models import Generation, Judge, JudgeError
from mining.models import Procedure
from tests.factories import make_generation, make_job, make_judgment, make_procedure, make_user
from tests.judging.runnable import make_runnable_generator, make_runnable_judge

pytestmark = pytest.mark.django_db


def started(job: Job, *, seconds_ago: float) -> Job:
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - datetime.timedelta(seconds=seconds_ago))
    job.refresh_from_db()
    return job


def judge_job(*, demo: bool = False, status: str = JobStatus.RUNNING) -> Job:
    generator, judge = make_runnable_generator(), make_runnable_judge(is_demo_model=demo)
    for _ in range(4):
        make_generation(generator=generator)
    job = judge_job_create(judge=judge, generator=generator)
    Job.objects.filter(pk=job.pk).update(status=status, done=1, failed=1)
    return started(job, seconds_ago=60)


def test_it_formats_durations() -> None:
    assert [format_duration(s) for s in (None, 4.4, 65, 3725)] == ["", "4 s", "1 min 05 s", "1 h 02 min"]


def test_it_lists_running_jobs_apart_from_finished_ones(admin_client: Client) -> None:
    running = judge_job()
    finished = make_job(status=JobStatus.SUCCEEDED, total=3, done=3)
    response = admin_client.get(reverse("jobs:job_list"))
    assert [line.job.pk for line in response.context["active_lines"]] == [running.pk]
    assert [line.job.pk for line in response.context["finished_lines"]] == [finished.pk]
    html = response.content.decode()
    assert (
        html.index(f'id="job-{running.pk}"')
        < html.index("<h2>Finished</h2>")
        < html.index(f'id="job-{finished.pk}"')
    )


def test_it_shows_progress_elapsed_eta_and_links_of_a_judge_job(admin_client: Client) -> None:
    job = judge_job()
    html = admin_client.get(reverse("jobs:job_list")).content.decode()
    line = f'id="job-{job.pk}"'
    row = html[html.index(line) : html.index("</tr>", html.index(line))]
    assert '<progress max="100" value="50"' in row and "1 / 4" in row and "1 failed" in row
    assert "1 min 00 s" in row or "1 min 01 s" in row
    assert "ETA 1 min" in row  # 2 items in 60 s: 2 left take about 60 s
    generator_pk, judge_id = job.parameters["generator"], job.parameters["judge_id"]
    assert reverse("judging:generator_detail", args=[generator_pk]) in row
    assert f"{reverse('judging:leaderboard')}?judge={judge_id}" in row


def test_it_labels_the_demo_judge_on_job_rows_and_pages(admin_client: Client) -> None:
    job = judge_job(demo=True)
    assert "demo model" in admin_client.get(reverse("jobs:job_list")).content.decode()
    page = admin_client.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    assert "demo model - judgments not meaningful" in page


def test_it_lists_jobs_in_a_fixed_number_of_queries(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    for _ in range(3):
        judge_job()
    make_job(status=JobStatus.SUCCEEDED)
    with django_assert_max_num_queries(7):
        admin_client.get(reverse("jobs:job_list"))


def test_it_polls_the_job_panel_and_stops_when_the_job_ends(admin_client: Client) -> None:
    job = judge_job()
    url = reverse("jobs:job_detail", args=[job.pk])
    page = admin_client.get(url).content.decode()
    assert f'id="job-panel" class="job-panel" hx-get="{url}" hx-trigger="every 2s"' in page
    assert page.count('hx-trigger="every 2s"') == 1  # the row inside the panel does not poll on its own
    panel = admin_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-panel").content.decode()
    assert panel.lstrip().startswith('<section id="job-panel"') and "every 2s" in panel
    assert "<html" not in panel
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    panel = admin_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-panel").content.decode()
    assert "hx-trigger" not in panel and "Succeeded" in panel
    row = admin_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}").content.decode()
    assert row.lstrip().startswith(f'<tr id="job-{job.pk}"') and "hx-trigger" not in row


def test_it_shows_item_errors_and_hides_the_item_list(admin_client: Client) -> None:
    job = judge_job()
    Job.objects.filter(pk=job.pk).update(
        parameters={**job.parameters, "errors": ["item 7: HTTP 500 after 6 attempts"]}
    )
    page = admin_client.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    assert "item 7: HTTP 500 after 6 attempts" in page
    assert "&#x27;items&#x27;: &#x27;4 ids&#x27;" in page


def test_it_offers_cancel_only_to_staff_who_may_run_jobs(admin_client: Client, staff: Client) -> None:
    job = judge_job()
    cancel_url = reverse("jobs:job_cancel", args=[job.pk])
    assert cancel_url in admin_client.get(reverse("jobs:job_list")).content.decode()
    assert cancel_url not in staff.get(reverse("jobs:job_list")).content.decode()
    assert staff.post(cancel_url).status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_it_cancels_from_a_plain_form_post(client: Client) -> None:
    user = make_user(is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_job"))
    client.force_login(user)
    job = judge_job()
    response = client.post(reverse("jobs:job_cancel", args=[job.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    page = client.get(response["Location"]).content.decode()
    assert f"Job #{job.pk} cancelled." in page and "hx-trigger" not in page


def test_it_cancels_from_htmx_and_swaps_the_row(admin_client: Client) -> None:
    job = judge_job()
    row = admin_client.post(
        reverse("jobs:job_cancel", args=[job.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}"
    ).content.decode()
    assert row.lstrip().startswith(f'<tr id="job-{job.pk}"') and "Cancelled" in row
    assert "hx-trigger" not in row and "job_cancel" not in row


def test_it_requires_csrf_to_cancel(client: Client) -> None:
    csrf_client = Client(enforce_csrf_checks=True)
    user = make_user(is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_job"))
    csrf_client.force_login(user)
    job = judge_job()
    assert csrf_client.post(reverse("jobs:job_cancel", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_it_refuses_get_on_cancel_and_retry(admin_client: Client) -> None:
    job = judge_job()
    assert admin_client.get(reverse("jobs:job_cancel", args=[job.pk])).status_code == 405
    assert admin_client.get(reverse("jobs:job_retry", args=[job.pk])).status_code == 405


def test_it_sends_outsiders_to_login_or_403(client: Client) -> None:
    job = make_job()
    response = client.post(reverse("jobs:job_cancel", args=[job.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(make_user(is_staff=False))
    assert client.post(reverse("jobs:job_cancel", args=[job.pk])).status_code == 403


def test_it_retries_failed_items_from_the_job_page(admin_client: Client) -> None:
    job = judge_job(status=JobStatus.SUCCEEDED)
    failed_generation = job.parameters["items"][0]
    JudgeError.objects.create(
        judge=Judge.objects.get(pk=job.parameters["judge"]),
        generation=Generation.objects.get(pk=failed_generation),
        job=job,
        error="HTTP 503",
    )
    page = admin_client.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    assert "Retry 1 failed item" in page
    response = admin_client.post(reverse("jobs:job_retry", args=[job.pk]))
    retry = Job.objects.exclude(pk=job.pk).get()
    assert response["Location"] == reverse("jobs:job_detail", args=[retry.pk])
    assert retry.parameters["items"] == [failed_generation]


def test_it_links_a_generate_job_to_its_generator(admin_client: Client) -> None:
    make_procedure()
    generator = make_runnable_generator()
    job = generate_job_create(generator=generator)
    page = admin_client.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    assert reverse("judging:generator_detail", args=[generator.pk]) in page
    assert job.kind == GENERATE and "Queued" in page


def test_it_offers_to_judge_what_a_generate_job_wrote(runner: Client, staff: Client) -> None:
    """#31 item 6: after a generate job, "Judge these" on its page and on the generator's page leads to a
    page that starts judging the generator's L2 (the run permission needed; GET starts nothing)."""
    procedure = make_procedure()
    generator = make_runnable_generator()
    job = generate_job_create(generator=generator, enqueue=False)
    judge_page = reverse("judging:generator_judge", args=[generator.pk])
    assert judge_page not in runner.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    make_generation(generator=generator, procedure=procedure)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, done=1)
    assert (
        f'href="{judge_page}">Judge these</a>'
        in runner.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    )
    generator_page = reverse("judging:generator_detail", args=[generator.pk])
    assert f'href="{judge_page}">Judge these</a>' in runner.get(generator_page).content.decode()
    assert judge_page not in staff.get(generator_page).content.decode()  # no run permission, no button

    form = runner.get(judge_page).content.decode()
    assert form.count('value="file:smollm2-local.yaml"') == 1 and not Job.objects.exclude(pk=job.pk).exists()
    assert staff.get(judge_page).status_code == 403 and staff.post(judge_page).status_code == 403
    assert runner.put(judge_page).status_code == 405
    assert runner.post(judge_page, {"judge": "file:nope.yaml"}).status_code == 400
    started = runner.post(judge_page, {"judge": "file:smollm2-local.yaml"})
    judging = Job.objects.exclude(pk=job.pk).get()
    assert started.status_code == 302 and started["Location"] == reverse("jobs:job_detail", args=[judging.pk])
    assert judging.parameters["generator"] == generator.pk and judging.total == 1


# --- leaderboard metrics columns ---


def _scored_generator(predicted: list[str], *, measured: bool = True) -> Any:
    generator = make_runnable_generator(model=f"gen/{len(predicted)}-{measured}")
    generation = make_generation(
        generator=generator, procedure=make_procedure(steps=["a", "b"]), predicted_steps=predicted
    )
    if measured:
        fields = compute_generation_metrics(predicted, ["a", "b"]).as_fields()
        Generation.objects.filter(pk=generation.pk).update(**fields)
        Procedure.objects.filter(pk=generation.procedure_id).update(n_tokens=4)
    else:
        Generation.objects.filter(pk=generation.pk).update(n_tokens=None)
    make_judgment(generation=generation)
    return generator


def test_it_shows_metrics_beside_each_score(admin_client: Client) -> None:
    _scored_generator(["hello world", "hello world", "hello world"])
    response = admin_client.get(reverse("judging:leaderboard"))
    html = response.content.decode()
    (line,) = response.context["lines"]
    assert line.metrics.avg_tokens == 6.0 and line.metrics.gen_ref_ratio_percent == 150.0
    assert '<span class="metric-main">6</span>' in html and "150% of ref" in html
    assert "steps ≠ ref</span>100.0%" in html and "dup. steps</span>100.0%" in html
    assert "verbosity bias" in html and "compute_metrics" not in html.split('id="metrics-legend"')[0]


def test_it_shows_a_dash_and_the_command_when_metrics_are_missing(admin_client: Client) -> None:
    _scored_generator(["Stir."], measured=False)
    html = admin_client.get(reverse("judging:leaderboard")).content.decode()
    assert 'title="Not computed yet: run python manage.py compute_metrics">—</span>' in html
    assert "0/1 measured" in html and "<code>python manage.py compute_metrics</code>" in html


def test_it_adds_metric_columns_to_the_csv(admin_client: Client) -> None:
    _scored_generator(["hello world"])
    body = admin_client.get(reverse("judging:leaderboard_csv")).content.decode()
    (row,) = list(csv.DictReader(io.StringIO(body)))
    assert row["how2score_percent"] == "100.0"
    assert row["avg_tokens"] == "2.0" and row["gen_ref_ratio_percent"] == "50.0"
    assert row["step_count_mismatch_percent"] == "100.0" and row["n_with_metrics"] == "1"
