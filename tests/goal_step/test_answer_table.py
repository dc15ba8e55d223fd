"""The accuracy table of models answering a task set (the wikiHow paper's Tables 3-4): crafted answers worked
out by hand, the fragment's bars with intervals, the API, POST /api/jobs/ and the command; parsing and the
answer jobs are tests/goal_step/test_answer.py's."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from goal_step.answer import (
    task_model_for_config,
)
from goal_step.answer_views import task_models_context
from goal_step.job_kinds import ANSWER_TASKS
from goal_step.models import TaskAnswer, TaskModel, TaskSet, TaskSplit
from goal_step.results import NO_TOPIC, task_models_results
from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import job_type_for
from tests.factories import make_user
from tests.goal_step.test_answer import (  # noqa: F401 (fixtures and helpers of the tests moved here)
    CRAFTED,
    GI,
    SI,
    SO,
    answering,
    asked,
    config_file,
    example,
    make_task_set,
)
from tests.llm_server import LoopbackLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def task_set(db: Any) -> TaskSet:
    return make_task_set()


@pytest.fixture
def crafted(task_set: TaskSet) -> TaskModel:
    model = TaskModel.objects.create(model_id="crafted0001", model="org/crafted", is_demo_model=True)
    for (task, position), choice in CRAFTED.items():
        TaskAnswer.objects.create(model=model, example=example(task, position), choice=choice)
    TaskAnswer.objects.create(model=model, example=example(SI, 0), candidates_only=True, choice=3)
    TaskAnswer.objects.create(model=model, example=example(SI, 1), candidates_only=True, choice=3)
    return model


def test_it_scores_the_crafted_answers_as_worked_out_by_hand(
    task_set: TaskSet, crafted: TaskModel, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(3):
        table = task_models_results(task_set)
    assert table.tasks == [SI, GI, SO] and table.n_examples == {SI: 3, GI: 2, SO: 2}
    assert table.topics == ["Health", "Religion", NO_TOPIC]
    (results,) = table.models
    step, goal, order = results.tasks
    # Step Inference: 2 of 3. Wilson 95 %: centre (2/3 + z²/6) / (1 + z²/3) = 0.57309, half-width 0.36543.
    assert (step.overall.correct, step.overall.n, step.overall.unparsable, step.overall.missing) == (
        2,
        3,
        0,
        0,
    )
    assert step.overall.share == pytest.approx(2 / 3)
    assert step.overall.interval == pytest.approx((0.20766, 0.93852), abs=1e-4)
    # Goal Inference: 0 of 1 answered (unparsable: wrong), 1 missing. Wilson 0/1: (0, z²/(1+z²)) = (0, .79345)
    assert (goal.overall.correct, goal.overall.n, goal.overall.unparsable, goal.overall.missing) == (
        0,
        1,
        1,
        1,
    )
    assert goal.overall.interval == pytest.approx((0.0, 0.79345), abs=1e-4)
    # Step Ordering: 2 of 2. Wilson 2/2: (1 / (1 + z²/2), 1) = (0.34238, 1).
    assert (order.overall.correct, order.overall.n) == (2, 2)
    assert order.overall.interval == pytest.approx((0.34238, 1.0), abs=1e-4)
    assert order.overall.chance == 0.5 and step.overall.chance == 0.25
    # Per topic: Step Inference Health 1 of 2 -> Wilson 1/2 = (0.09453, 0.90547); Religion 1 of 1.
    topics = {c.topic: c.accuracy for c in step.by_topic}
    assert list(topics) == ["Health", "Religion"]
    assert (topics["Health"].correct, topics["Health"].n) == (1, 2)
    assert topics["Health"].interval == pytest.approx((0.09453, 0.90547), abs=1e-4)
    assert (topics["Religion"].correct, topics["Religion"].n) == (1, 1)
    goal_topics = {c.topic: c.accuracy for c in goal.by_topic}
    assert (goal_topics["Religion"].unparsable, goal_topics[NO_TOPIC].n, goal_topics[NO_TOPIC].missing) == (
        1,
        0,
        1,
    )
    # The candidates-only run: Step Inference only, 0 of 2 (Wilson 0/2 = (0, 0.65763)), chance 25 % inside.
    assert (step.candidates_only.correct, step.candidates_only.n) == (0, 2)
    assert step.candidates_only.interval == pytest.approx((0.0, 0.65763), abs=1e-4)
    assert step.candidates_only.at_chance
    assert goal.candidates_only is None and order.candidates_only is None
    assert results.topic_rows[0][0] == "Health" and results.topic_rows[2] == (
        NO_TOPIC,
        [None, goal_topics[NO_TOPIC], None],
    )


def test_only_restricts_the_table_to_the_given_examples(task_set: TaskSet, crafted: TaskModel) -> None:
    table = task_models_results(task_set, only=[example(SI, 0).pk, example(SI, 1).pk])
    assert table.tasks == [SI] and table.n_examples == {SI: 2}
    (results,) = table.models
    assert (results.tasks[0].overall.correct, results.tasks[0].overall.n) == (1, 2)
    assert task_models_results(task_set, split=TaskSplit.TRAIN).models == []


def test_the_fragment_draws_bars_with_intervals(task_set: TaskSet, crafted: TaskModel) -> None:
    html = render_to_string("goal_step/_task_models.html", task_models_context(task_set))
    assert 'id="task-models"' in html and "org/crafted" in html and "crafted0001" in html
    assert "66.7%" in html and "20.8\u201393.9" in html  # Step Inference 2 of 3 and its interval
    assert (
        '<span style="width: 66.7%"></span><i class="scorebar-ci" style="left: 20.77%; width: 73.08%">'
        in html
    )
    assert "1 unparsable" in html and "1 not answered" in html
    assert "candidates only 0.0% (0.0\u201365.8)" in html and "at chance" in html
    assert "demo model - answers not meaningful" in html and "proves the plumbing" in html
    assert '<th scope="row">Religion</th>' in html and NO_TOPIC in html
    empty = render_to_string(
        "goal_step/_task_models.html", task_models_context(TaskSet.objects.create(name="empty"))
    )
    assert "No model has answered these examples yet" in empty and "answer_tasks --task-set empty" in empty


# --- the API ------------------------------------------------------------------------------------------------


def test_the_api_returns_accuracy_per_task_and_topic(
    staff: Client, task_set: TaskSet, crafted: TaskModel
) -> None:
    url = reverse("api:task-models", args=[task_set.name])
    assert url == "/api/tasks/lentils/models/"
    response = staff.get(url)
    assert response.status_code == 200
    body = response.json()
    assert (body["task_set"], body["split"], body["tasks"]) == ("lentils", "test", [SI, GI, SO])
    assert body["n_examples"] == {SI: 3, GI: 2, SO: 2} and body["topics"] == ["Health", "Religion", NO_TOPIC]
    (model,) = body["models"]
    assert (model["model_id"], model["model"], model["is_demo_model"]) == ("crafted0001", "org/crafted", True)
    step, goal, _ = model["tasks"]
    assert step["label"] == "Step inference"
    assert step["overall"]["accuracy"] == pytest.approx(2 / 3)
    assert step["overall"]["interval"] == pytest.approx([0.20766, 0.93852], abs=1e-4)
    assert (goal["overall"]["unparsable"], goal["overall"]["missing"], goal["overall"]["n"]) == (1, 1, 1)
    assert step["candidates_only"]["chance"] == 0.25 and step["candidates_only"]["at_chance"] is True
    assert goal["candidates_only"] is None
    assert [t["topic"] for t in step["by_topic"]] == ["Health", "Religion"]
    assert step["by_topic"][0]["accuracy"]["correct"] == 1


def test_the_api_is_staff_only_and_read_only(staff: Client, task_set: TaskSet) -> None:
    url = reverse("api:task-models", args=[task_set.name])
    assert Client().get(url).status_code in (401, 403)
    outsider = Client()
    outsider.force_login(make_user())
    assert outsider.get(url).status_code == 403
    assert staff.post(url).status_code == 405
    assert staff.get(url, {"split": "nope"}).status_code == 400
    assert staff.get(url, {"validated": "1"}).status_code == 409  # no validation results known
    assert staff.get(reverse("api:task-models", args=["nope"])).status_code == 404
    assert staff.get(url).json()["models"] == []
    schema = staff.get(reverse("api-schema"), {"format": "json"}).json()
    assert "/api/tasks/{name}/models/" in schema["paths"]


def test_post_api_jobs_starts_an_answer_job(runner: Client, staff: Client, task_set: TaskSet) -> None:
    model = task_model_for_config(Path("configs/goal_step/smollm2-local.yaml"))
    body = {
        "kind": "answer_tasks",
        "model_id": model.model_id,
        "task_set": task_set.name,
        "candidates_only": True,
    }
    assert (
        staff.post("/api/jobs/", body, content_type="application/json").status_code == 403
    )  # no run permission
    response = runner.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.total, job.parameters["backend"], job.parameters["candidates_only"]) == (
        ANSWER_TASKS,
        7,
        "local",
        True,
    )
    bad = runner.post("/api/jobs/", {**body, "task_set": "nope"}, content_type="application/json")
    assert bad.status_code == 400 and "task_set" in bad.json()
    # The Jobs pages name the model (a demo model) and link to the figures.
    (description,) = job_type_for(ANSWER_TASKS).describe([job]).values()  # type: ignore[misc]
    assert [s.role for s in description.subjects] == ["model", "task set"]
    assert "not meaningful" in description.subjects[0].warning
    assert any(link.url == "/api/tasks/lentils/models/" for link in description.links)
    assert ("asked with", "candidates only (artifact check)") in description.facts


# --- the command --------------------------------------------------------------------------------------------


def test_the_command_starts_a_job_and_names_a_bad_config(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    config = config_file(llm_server, tmp_path)
    out = io.StringIO()
    call_command("answer_tasks", "--task-set", task_set.name, "--config", str(config), stdout=out)
    job = Job.objects.get()
    assert out.getvalue().startswith(
        f"job {job.pk}: answer the test examples of task set lentils with loopback"
    )
    assert (job.kind, job.total, job.parameters["candidates_only"]) == (ANSWER_TASKS, 7, False)
    out = io.StringIO()
    call_command(
        "answer_tasks", "--task-set", task_set.name, "--config", str(config), "--candidates-only", stdout=out
    )
    assert "from the candidates alone" in out.getvalue() and Job.objects.count() == 2
    with pytest.raises(CommandError, match="no task set 'nope'"):
        call_command("answer_tasks", "--task-set", "nope", "--config", str(config))
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: m\nbackend: deluge\n", encoding="utf-8")
    with pytest.raises(CommandError, match=f"{bad}: provider: "):
        call_command("answer_tasks", "--task-set", task_set.name, "--config", str(bad))


@pytest.mark.django_db(transaction=True)
def test_the_command_waits_for_the_job_with_a_progress_bar(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from h2e_site.celery import app

    llm_server.responder = answering({})
    out = io.StringIO()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # the worker is this process: the job runs when it is enqueued
    try:
        call_command(
            "answer_tasks",
            "--task-set",
            task_set.name,
            "--config",
            str(config_file(llm_server, tmp_path)),
            "--wait",
            stdout=out,
            stderr=io.StringIO(),
        )
    finally:
        app.conf.task_always_eager = eager
    job = Job.objects.get()
    assert f"job {job.pk} succeeded: 7 done, 0 failed of 7" in out.getvalue()
    assert "7/7" in capsys.readouterr().err
    assert TaskAnswer.objects.count() == 7
    out = io.StringIO()
    call_command(
        "answer_tasks",
        "--task-set",
        task_set.name,
        "--config",
        str(config_file(llm_server, tmp_path)),
        stdout=out,
    )
    assert "nothing to answer" in out.getvalue()
