"""The task set pages and downloads: staff only, wrong methods refused, the htmx fragment, the Build form."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goal_step.human_labels import HumanLabels, human_labels_register
from goal_step.job_kinds import BUILD_TASKS
from goal_step.models import TaskSet, TaskSplit
from goal_step.selectors import task_funnels
from h2e_site.jobs.models import Job
from mining.models import Procedure
from tests.factories import make_user
from tests.goal_step.task_sets import build, make_procedures

pytestmark = pytest.mark.django_db
DEMO_BENCH = Path(__file__).resolve().parents[2] / "demo" / "paper-examples" / "bench.jsonl"


@pytest.fixture
def built() -> TaskSet:
    make_procedures()
    return build("paged")


def urls(task_set: TaskSet) -> list[str]:
    name = task_set.name
    return [
        reverse("goal_step:task_sets"),
        reverse("goal_step:task_set", args=[name]),
        reverse("goal_step:task_set_test_jsonl", args=[name]),
        reverse("goal_step:task_set_train_jsonl", args=[name]),
        reverse("goal_step:task_set_bigbench", args=[name, "step_inference"]),
    ]


def test_it_sends_outsiders_to_login_and_refuses_non_staff(built: TaskSet) -> None:
    member = Client()
    member.force_login(make_user())
    for url in [*urls(built), reverse("goal_step:task_set_build")]:
        assert Client().get(url).status_code == 302, url
        assert member.get(url).status_code == 403, url
    assert Client().post(reverse("goal_step:task_set_build"), {"name": "x"}).status_code == 302
    assert not Job.objects.filter(kind=BUILD_TASKS).exclude(pk=built.job_id).exists()


def test_it_refuses_the_wrong_method(built: TaskSet, staff: Client) -> None:
    for url in urls(built):
        assert staff.post(url).status_code == 405, url
    assert staff.get(reverse("goal_step:task_set_build")).status_code == 405


def test_it_lists_the_task_sets_with_the_build_form(built: TaskSet, boss: Client) -> None:
    build("second", seed=2)
    with CaptureQueriesContext(connection) as queries:
        response = boss.get(reverse("goal_step:task_sets"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "paged" in page and "second" in page and 'name="test_share"' in page
    assert "jobs-table" in page  # the recent build jobs, as the Jobs page's rows
    assert len(queries) <= 14, [q["sql"] for q in queries.captured_queries]


def test_it_hides_the_build_form_without_the_run_permission(built: TaskSet, staff: Client) -> None:
    page = staff.get(reverse("goal_step:task_sets")).content.decode()
    assert 'name="test_share"' not in page and "needs the “add job” permission" in page
    response = staff.post(reverse("goal_step:task_set_build"), {"name": "x", "seed": 0, "splits": ["bench"]})
    assert response.status_code == 403


def test_it_starts_a_build_from_the_form(boss: Client) -> None:
    make_procedures(5)
    data = {"name": "from-form", "seed": 4, "splits": ["bench"], "test_share": 0.3}
    response = boss.post(reverse("goal_step:task_set_build"), data)
    assert response.status_code == 302 and response["Location"] == reverse(
        "goal_step:task_set", args=["from-form"]
    )
    task_set = TaskSet.objects.get(name="from-form")
    assert task_set.job is not None and task_set.job.kind == BUILD_TASKS
    page = boss.get(response["Location"]).content.decode()
    assert f'id="job-{task_set.job_id}"' in page and "every 2s" in page  # the live job row


def test_it_shows_form_errors(boss: Client) -> None:
    response = boss.post(
        reverse("goal_step:task_set_build"), {"name": "bad name", "seed": 0, "splits": ["bench"]}
    )
    assert response.status_code == 400 and "slug" in response.content.decode().lower()
    response = boss.post(
        reverse("goal_step:task_set_build"), {"name": "ok", "seed": 0, "splits": ["pool"], "test_share": 0.2}
    )
    assert response.status_code == 400 and "no procedure" in response.content.decode()
    assert not TaskSet.objects.exists()


def test_it_shows_the_funnel_and_artifact_check(built: TaskSet, staff: Client) -> None:
    response = staff.get(reverse("goal_step:task_set", args=[built.name]))
    page = response.content.decode()
    assert response.status_code == 200
    for task in ("step_inference", "goal_inference", "step_ordering"):
        assert f'data-task="{task}"' in page
        funnel = built.funnel[task]
        assert str(funnel["in"]) in page
    assert "Lexical-overlap filter" in page and "Artifact check" in page
    assert "yes: at chance" in page or "no: an artifact" in page
    assert "25 %" in page and "50 %" in page
    assert reverse("goal_step:task_set_test_jsonl", args=[built.name]) in page
    assert "Health" in page  # counts by topic


def test_it_renders_the_body_fragment_for_htmx(built: TaskSet, staff: Client) -> None:
    response = staff.get(reverse("goal_step:task_set", args=[built.name]), HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200 and page.lstrip().startswith('<div id="task-set-body"')
    assert "<html" not in page and "Artifact check" in page


def test_it_downloads_the_test_and_train_sets(built: TaskSet, staff: Client) -> None:
    response = staff.get(reverse("goal_step:task_set_test_jsonl", args=[built.name]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == built.examples.filter(split=TaskSplit.TEST).count()
    assert {r["split"] for r in rows} == {"test"} and {r["validated"] for r in rows} == {None}
    assert set(rows[0]) >= {"task", "prompt", "candidates", "answer", "topic", "source_example_id"}
    response = staff.get(reverse("goal_step:task_set_train_jsonl", args=[built.name]))
    train = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(train) == built.examples.filter(split=TaskSplit.TRAIN).count() and "validated" not in train[0]


def test_it_exports_only_validated_examples_when_a_source_is_registered(
    built: TaskSet, staff: Client
) -> None:
    url = reverse("goal_step:task_set_test_jsonl", args=[built.name]) + "?validated=1"
    assert staff.get(url).status_code == 400  # no validation results yet
    chosen = set(built.examples.filter(split=TaskSplit.TEST).values_list("pk", flat=True)[:4])
    before = human_labels_register(HumanLabels(validated=lambda task_set: chosen))
    try:
        rows = [json.loads(line) for line in b"".join(staff.get(url).streaming_content).splitlines()]
        everything = b"".join(staff.get(url.split("?")[0]).streaming_content).splitlines()
    finally:
        human_labels_register(before)
    assert len(rows) == 4 and {r["validated"] for r in rows} == {True}
    assert sum(json.loads(line)["validated"] for line in everything) == 4


def test_it_downloads_a_bigbench_task_and_refuses_an_unknown_task(built: TaskSet, staff: Client) -> None:
    response = staff.get(reverse("goal_step:task_set_bigbench", args=[built.name, "goal_inference"]))
    data = json.loads(response.content)
    assert data["name"] == "goal_inference" and data["preferred_score"] == "multiple_choice_grade"
    assert len(data["examples"]) == built.examples.filter(task="goal_inference", split=TaskSplit.TEST).count()
    assert staff.get(reverse("goal_step:task_set_bigbench", args=[built.name, "nope"])).status_code == 404
    assert staff.get(reverse("goal_step:task_set", args=["missing"])).status_code == 404


def test_it_lists_task_sets_in_the_admin(built: TaskSet, boss: Client) -> None:
    response = boss.get(reverse("admin:goal_step_taskset_changelist"))
    assert (
        response.status_code == 200
        and reverse("goal_step:task_set", args=[built.name]) in response.content.decode()
    )
    assert boss.get(reverse("admin:goal_step_taskset_change", args=[built.pk])).status_code == 200
    assert boss.get(reverse("admin:goal_step_taskexample_changelist")).status_code == 200


def test_it_builds_again_from_the_admin_action(built: TaskSet, boss: Client) -> None:
    url = reverse("admin:goal_step_taskset_changelist")
    base = {"action": "build_again", "_selected_action": [built.pk]}
    assert boss.post(url, base).status_code == 200  # the intermediate page
    response = boss.post(url, {**base, "apply": "yes", "name": "again", "seed": 7})
    assert response.status_code == 302
    again = TaskSet.objects.get(name="again")
    assert again.seed == 7 and again.selection["splits"] == built.selection["splits"]
    assert again.job is not None


def test_the_names_of_before_the_move_still_resolve_to_the_same_pages() -> None:
    """The pages left the mining app with their paths; links written with mining:* names keep working."""
    for name, args in [
        ("task_sets", []),
        ("task_set_build", []),
        ("task_set", ["s"]),
        ("task_set_answer", ["s"]),
        ("task_set_test_jsonl", ["s"]),
        ("task_set_train_jsonl", ["s"]),
        ("task_set_bigbench", ["s", "step_inference"]),
    ]:
        assert reverse(f"mining:{name}", args=args) == reverse(f"goal_step:{name}", args=args)
    assert reverse("goal_step:task_set", args=["s"]) == "/tasks/s/"


def test_the_demo_procedures_with_the_default_build_keep_step_ordering_test_and_train(staff: Client) -> None:
    """#31 item 8: the demo's procedures (the paper's, How2Bench's: ordered) built with every default keep
    Step Ordering examples on both sides; a task that keeps no train says why on the page."""
    call_command("import_bench", str(DEMO_BENCH), stdout=io.StringIO(), stderr=io.StringIO())
    task_set = build("demo-defaults")
    counts = {funnel.task: (funnel.test, funnel.train) for funnel in task_funnels(task_set)}
    assert counts["step_ordering"][0] > 0 and counts["step_ordering"][1] > 0, counts
    page = staff.get(reverse("goal_step:task_set", args=[task_set.name])).content.decode()
    for task, (_, train) in counts.items():
        if not train:  # at 18 procedures every text recurs: the split by text leaves nothing to train on
            assert "A split by procedure keeps every example of the training procedures" in page, task


def test_a_task_that_keeps_nothing_says_why_on_the_page(staff: Client) -> None:
    make_procedures()
    Procedure.objects.update(ordered=None)
    task_set = build("unordered")
    page = staff.get(reverse("goal_step:task_set", args=[task_set.name])).content.decode()
    assert 'data-warning="none"' in page
    assert "Step Ordering uses ordered procedures only, and none of these is marked ordered" in page
