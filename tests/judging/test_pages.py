"""HTML pages: staff login, leaderboard (htmx fragment), generator, generation (L1 vs L2), jobs polling."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging import selectors
from tests.factories import (
    make_generation,
    make_job,
    make_judge,
    make_judgment,
    make_procedure,
    make_scored_world,
    make_user,
)

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


@pytest.fixture
def world() -> dict[str, Any]:
    return make_scored_world()


def page_urls(world: dict[str, Any]) -> list[str]:
    generation = world["generations"][world["generators"][0]][0]
    job = make_job()
    return [
        reverse("judging:leaderboard"),
        reverse("judging:leaderboard_csv"),
        reverse("judging:generator_detail", args=[generation.generator_id]),
        reverse("failures:generation_detail", args=[generation.pk]),
        reverse("jobs:job_list"),
        reverse("jobs:job_detail", args=[job.pk]),
    ]


def test_it_redirects_anonymous_users_to_login(client: Client, world: dict) -> None:
    for url in page_urls(world):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login") + "?next="), url


def test_it_refuses_non_staff_users(user_client: Client, world: dict) -> None:
    for url in page_urls(world):
        assert user_client.get(url).status_code == 403, url
    assert "not a staff account" in user_client.get(reverse("judging:leaderboard")).content.decode()


def test_it_refuses_posts_to_pages(admin_client: Client, world: dict) -> None:
    for url in page_urls(world):
        assert admin_client.post(url).status_code == 405, url


def test_it_logs_in_staff_and_lands_on_the_leaderboard(client: Client) -> None:
    make_user(username="ada", is_staff=True, password="s3cret-pass")
    response = client.post(reverse("login"), {"username": "ada", "password": "s3cret-pass"})
    assert response.status_code == 302 and response["Location"] == reverse("judging:leaderboard")
    assert client.get(reverse("judging:leaderboard")).status_code == 200


def test_it_logs_out_by_post_only(admin_client: Client) -> None:
    assert admin_client.get(reverse("logout")).status_code == 405
    assert admin_client.post(reverse("logout")).status_code == 302
    assert admin_client.get(reverse("judging:leaderboard")).status_code == 302


def test_it_shows_the_leaderboard(admin_client: Client, world: dict) -> None:
    response = admin_client.get(reverse("judging:leaderboard"), {"judge": "all"})
    html = response.content.decode()
    assert "<html" in html and "htmx.min.js" in html and 'hx-headers=\'{"X-CSRFToken"' in html
    for row in selectors.how2score_leaderboard():
        assert row.generator_id in html and row.judge_id in html
    assert "50.0%" in html  # model-a by judge-x: one failure among two scored examples
    assert 'title="A plumbing/demo model: its judgments are not meaningful">demo model</span>' in html
    assert reverse("judging:generator_detail", args=[world["generators"][0].pk]) in html


def test_it_renders_only_the_fragment_for_htmx(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    response = admin_client.get(
        reverse("judging:leaderboard"), {"judge": judge_x.judge_id}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="leaderboard">')
    assert "<html" not in html and "<select" not in html
    assert judge_x.judge_id in html and world["judges"][1].judge_id not in html


def test_it_renders_the_whole_page_for_an_htmx_history_restore(admin_client: Client, world: dict) -> None:
    response = admin_client.get(
        reverse("judging:leaderboard"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in response.content.decode()
    assert "HX-Request" in response["Vary"]


def test_it_filters_the_leaderboard_without_javascript(admin_client: Client, world: dict) -> None:
    judge_y = world["judges"][1]
    html = admin_client.get(reverse("judging:leaderboard"), {"judge": judge_y.judge_id}).content.decode()
    assert f'<option value="{judge_y.judge_id}" selected>' in html
    assert f"?judge={judge_y.judge_id}" in html  # the CSV link keeps the filter
    table = html.split('<div id="leaderboard">', 1)[1]
    assert world["judges"][0].judge_id not in table


def test_it_lists_the_leaderboard_in_few_queries(
    admin_client: Client, world: dict, django_assert_max_num_queries: Any
) -> None:
    # 9-12: which judges have judgments (1: the default judge), the paired tests' version (1), verdicts and
    # their ids (3) when not cached yet; a judge asked for spares the first
    with django_assert_max_num_queries(12):
        assert admin_client.get(reverse("judging:leaderboard")).status_code == 200
    with django_assert_max_num_queries(11):
        response = admin_client.get(reverse("judging:leaderboard"), {"judge": world["judges"][0].judge_id})
        assert response.status_code == 200


def test_it_downloads_the_leaderboard_as_csv(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    response = admin_client.get(reverse("judging:leaderboard_csv"), {"judge": judge_x.judge_id})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    expected = [r.as_json() for r in selectors.how2score_leaderboard(judge_ids=[judge_x.judge_id])]
    assert [r["generator_id"] for r in rows] == [r["generator_id"] for r in expected]
    assert [float(r["how2score_percent"]) for r in rows] == [r["how2score_percent"] for r in expected]


def test_it_says_how_to_import_when_empty(admin_client: Client) -> None:
    html = admin_client.get(reverse("judging:leaderboard")).content.decode()
    assert "No judgments yet" in html and "import_h2e" in html
    assert reverse("admin:judging_import") in html


def test_it_shows_a_generator_with_verdicts_per_judge(
    admin_client: Client, world: dict, django_assert_max_num_queries: Any
) -> None:
    gen_b = world["generators"][1]
    with django_assert_max_num_queries(11):  # session, user, generator, judges x2, page x3, scores x3
        response = admin_client.get(reverse("judging:generator_detail", args=[gen_b.pk]))
    html = response.content.decode()
    assert "2 failures" in html and "no failure" in html
    for generation in world["generations"][gen_b]:
        assert reverse("failures:generation_detail", args=[generation.pk]) in html


def test_it_shows_l1_and_l2_side_by_side_with_failures(admin_client: Client) -> None:
    judgment = make_judgment(failures=[("Never removes the plant from its pot", [2], [2, 3])])
    html = admin_client.get(
        reverse("failures:generation_detail", args=[judgment.generation_id])
    ).content.decode()
    assert 'id="l1-step-3"' in html and 'id="l2-step-4"' in html
    assert 'data-l1="2" data-l2="2 3"' in html
    assert ">L1 2</a>" in html and ">L2 3</a>" in html
    assert "Never removes the plant from its pot" in html
    assert "failure-links.js" in html


def test_it_flags_out_of_range_and_odd_step_numbers(admin_client: Client) -> None:
    judgment = make_judgment(failures=[("Points nowhere", [0, 99, "x"], [None, 4])])
    response = admin_client.get(reverse("failures:generation_detail", args=[judgment.generation_id]))
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count("out of range") == 4
    assert 'data-l1="" data-l2="4"' in html


def test_it_shows_parse_failures_and_raw_output(admin_client: Client) -> None:
    judgment = make_judgment(parse_failed=True, raw_output="not json at all")
    html = admin_client.get(
        reverse("failures:generation_detail", args=[judgment.generation_id])
    ).content.decode()
    assert "parse failed" in html and "not json at all" in html


def test_it_escapes_user_text(admin_client: Client) -> None:
    procedure = make_procedure(goal=f"Goal {XSS}", steps=[f"Step {XSS}"], resources=[XSS], topic=None)
    generation = make_generation(procedure=procedure, predicted_steps=[XSS], completion=XSS)
    make_judgment(
        generation=generation,
        judge=make_judge(model=XSS),
        failures=[(XSS, [1], [1])],
        reasoning=XSS,
        raw_output=XSS,
    )
    for url in (
        reverse("failures:generation_detail", args=[generation.pk]),
        reverse("judging:generator_detail", args=[generation.generator_id]),
        reverse("judging:leaderboard"),
    ):
        html = admin_client.get(url).content.decode()
        assert XSS not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


def test_it_shows_a_generation_in_few_queries(
    admin_client: Client, world: dict, django_assert_max_num_queries: Any
) -> None:
    generation = world["generations"][world["generators"][1]][0]
    with django_assert_max_num_queries(7):  # 7th: the judges that could not judge it (JudgeError)
        assert (
            admin_client.get(reverse("failures:generation_detail", args=[generation.pk])).status_code == 200
        )


def test_it_returns_404_for_missing_objects(admin_client: Client) -> None:
    assert admin_client.get(reverse("failures:generation_detail", args=[999999])).status_code == 404
    assert admin_client.get(reverse("judging:generator_detail", args=[999999])).status_code == 404
    assert admin_client.get(reverse("jobs:job_detail", args=[999999])).status_code == 404


def test_it_lists_jobs_and_polls_only_unfinished_ones(
    admin_client: Client, admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    running = make_job(status="running", total=10, done=4, created_by=admin_user)
    finished = make_job(status="succeeded", total=10, done=10)
    with django_assert_max_num_queries(5):
        html = admin_client.get(reverse("jobs:job_list")).content.decode()
    poll = f'hx-get="{reverse("jobs:job_detail", args=[running.pk])}" hx-trigger="every 2s"'
    assert poll in html
    assert f'hx-get="{reverse("jobs:job_detail", args=[finished.pk])}"' not in html
    assert '<progress max="100" value="40"' in html


def test_it_polls_a_job_row_as_a_fragment_and_stops_when_finished(admin_client: Client) -> None:
    job = make_job(status="running", total=4, done=1)
    url = reverse("jobs:job_detail", args=[job.pk])
    fragment = admin_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith(f'<tr id="job-{job.pk}"') and 'hx-trigger="every 2s"' in fragment
    job.status, job.done = "succeeded", 4
    job.save()
    fragment = admin_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in fragment and "Succeeded" in fragment
    page = admin_client.get(url).content.decode()
    assert "<html" in page and f'id="job-{job.pk}"' in page


def test_it_ranks_generators_within_each_judge(admin_client: Client, world: dict) -> None:
    response = admin_client.get(reverse("judging:leaderboard"), {"judge": "all"})
    ranks = [line.rank for line in response.context["lines"]]
    judges = [line.row.judge_id for line in response.context["lines"]]
    for judge_id in set(judges):
        assert [r for r, j in zip(ranks, judges, strict=True) if j == judge_id] == [1, 2]


def test_it_marks_a_partial_run_on_the_leaderboard(admin_client: Client) -> None:
    """18 of 40 generations judged (a cancelled job): ranked like the others, but marked, with its coverage
    in the API and the CSV (#12: honest denominators)."""
    from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

    generator, judge = make_generator(model="half-judged"), make_judge()
    generations = [make_generation(generator=generator, procedure=make_procedure()) for _ in range(40)]
    for generation in generations[:18]:
        make_judgment(generation=generation, judge=judge)
    html = admin_client.get(reverse("judging:leaderboard")).content.decode()
    assert "partial · 45%" in html and "Judged 18 of the generator's 40 generations" in html
    (row,) = admin_client.get(reverse("api:leaderboard")).json()["results"]
    assert row["coverage_percent"] == pytest.approx(45.0)
    csv_text = admin_client.get(reverse("judging:leaderboard_csv")).content.decode()
    header, values = (line.split(",") for line in csv_text.strip().splitlines()[:2])
    assert dict(zip(header, values, strict=True))["coverage_percent"] == "45.0"
