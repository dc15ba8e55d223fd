"""The build_tasks job end to end with the real embedding model: examples, funnel, artifact check, split,
reproducibility, progress and cancelling; the API and the command that start it."""

from __future__ import annotations

import itertools
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from goal_step.build import TASKS
from goal_step.job_kinds import BUILD_TASKS
from goal_step.jobs import TaskSetRefused, task_set_create
from goal_step.models import TaskSet, TaskSplit
from h2e_site.embeddings import store
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import job_cancel
from mining.models import Procedure, Split, Topic
from tests.factories import make_user
from tests.goal_step.task_sets import TOPICS, build, make_procedures, signature, texts_of

pytestmark = pytest.mark.django_db


def test_it_builds_the_three_tasks_from_the_selected_procedures() -> None:
    make_procedures()
    make_procedures(5, split=Split.TRAIN, seed=9)  # not selected
    task_set = build()
    job = Job.objects.get(pk=task_set.job_id)
    assert job.kind == BUILD_TASKS and job.status == JobStatus.SUCCEEDED, job.error
    bench = Procedure.objects.filter(split=Split.BENCH)
    texts = {t for p in bench for t in (p.goal, *p.steps)}
    assert job.total == len(texts) + len(TASKS) == job.done
    assert task_set.settings["procedures"] == bench.count()
    for task in TASKS:
        assert task_set.examples.filter(task=task, split=TaskSplit.TEST).exists(), task
    assert not task_set.examples.exclude(procedure__split=Split.BENCH).exists()
    ordering = task_set.examples.filter(task="step_ordering").select_related("procedure")
    assert ordering and all(e.procedure is not None and e.procedure.ordered is True for e in ordering)


def test_it_never_takes_a_negative_from_the_positives_topic() -> None:
    make_procedures()
    task_set = build()
    checked = 0
    for example in task_set.examples.exclude(task="step_ordering"):
        topics, pks = example.meta["candidate_topics"], example.meta["candidate_pks"]
        assert example.topic_id == (example.procedure.topic_id if example.procedure else None)
        assert (Topic.objects.get(pk=example.topic_id).name if example.topic_id else None) == topics[
            example.answer
        ]
        for i, topic in enumerate(topics):
            if i == example.answer:
                continue
            assert pks[i] != pks[example.answer]
            assert topic is None or topic != topics[example.answer]
            checked += 1
    assert checked > 60


def test_it_writes_a_funnel_that_adds_up_and_the_artifact_check() -> None:
    make_procedures()
    task_set = build()
    for task in TASKS:
        funnel = task_set.funnel[task]
        assert funnel["in"] - sum(row["count"] for row in funnel["removed"]) == funnel["kept"] > 0
        assert funnel["test"] + funnel["train"] + funnel["shared_with_test"] == funnel["kept"]
        assert task_set.examples.filter(task=task).count() == funnel["test"] + funnel["train"]
        check = task_set.artifacts[task]
        assert check["n"] == funnel["test"] + funnel["train"]
        assert check["ci_low"] <= check["share"] <= check["ci_high"]
        assert check["chance"] == pytest.approx(0.5 if task == "step_ordering" else 0.25)
        assert check["at_chance"] == (check["ci_low"] <= check["chance"] <= check["ci_high"])
    stages = [row["stage"] for row in task_set.funnel["step_inference"]["removed"]]
    assert stages == [
        "too_few_negatives",
        "same_goal",
        "markup",
        "length",
        "lexical_overlap",
        "tfidf",
        "similarity",
        "duplicate",
    ]


def test_it_shares_no_prompt_or_candidate_between_train_and_test() -> None:
    make_procedures()
    task_set = build(test_share=0.3)
    test_texts = set().union(*(texts_of(e) for e in task_set.examples.filter(split=TaskSplit.TEST)))
    train = list(task_set.examples.filter(split=TaskSplit.TRAIN))
    assert train and test_texts
    assert all(not texts_of(e) & test_texts for e in train)


def test_it_builds_the_same_examples_from_the_same_seed() -> None:
    make_procedures()
    first, again, other = build("one", seed=3), build("two", seed=3), build("three", seed=4)
    assert signature(first) == signature(again)
    assert signature(first) != signature(other)


def test_it_counts_progress_batch_by_batch_while_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "EMBED_BATCH", 16)
    make_procedures()
    seen: list[tuple[int, int]] = []
    task_set = build(on_progress=lambda job: seen.append((job.done, job.total)))
    total = Job.objects.get(pk=task_set.job_id).total
    during = sorted({done for done, _ in seen if 0 < done < total - len(TASKS)})
    assert len(during) >= 5 and all(b - a <= 16 for a, b in itertools.pairwise(during))
    assert {t for _, t in seen} == {total}


def test_it_stops_when_the_job_is_cancelled_while_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "EMBED_BATCH", 16)
    make_procedures()

    def cancel(job: Job) -> None:
        if job.done:
            job_cancel(job=job)

    task_set = build(on_progress=cancel)
    assert Job.objects.get(pk=task_set.job_id).status == JobStatus.CANCELLED
    assert not task_set.examples.exists() and task_set.funnel == {}


def test_it_builds_from_chosen_topics_only() -> None:
    make_procedures()
    chosen = Topic.objects.filter(name__in=TOPICS[:2])
    task_set = build(topic_ids=[t.pk for t in chosen])
    topics = set(task_set.examples.values_list("procedure__topic__name", flat=True))
    assert topics and topics <= set(TOPICS[:2])


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("Not a slug!", {}, "not a slug"),
        ("build", {}, "taken by a page"),
        ("ok", {"splits": ["nope"]}, "splits"),
        ("ok", {"test_share": 1.0}, "test_share"),
        ("ok", {"topic_ids": [999_999]}, "no topic with id"),
        ("ok", {"splits": [Split.POOL]}, "no procedure"),
    ],
)
def test_it_refuses_what_it_cannot_build(name: str, options: dict, message: str) -> None:
    make_procedures(3)
    with pytest.raises(TaskSetRefused, match=message):
        task_set_create(name, enqueue=False, **options)
    assert not TaskSet.objects.exists() and not Job.objects.exists()


def test_it_refuses_a_name_taken() -> None:
    make_procedures(3)
    task_set_create("taken", enqueue=False)
    with pytest.raises(TaskSetRefused, match="exists already"):
        task_set_create("taken", enqueue=False)


# --- API and command -----------------------------------------------------------------------------------


def test_it_starts_a_build_job_on_post_api_jobs(boss: Client) -> None:
    make_procedures(5)
    body = {"kind": "build_tasks", "name": "api-set", "seed": 2, "topics": ["Health"], "test_share": 0.25}
    response = boss.post("/api/jobs/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    task_set = TaskSet.objects.get(name="api-set")
    assert job.kind == BUILD_TASKS and task_set.job == job and task_set.seed == 2
    assert job.parameters["task_set"] == task_set.pk
    assert task_set.selection["topic_names"] == ["Health"] and task_set.selection["splits"] == ["bench"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "topics": ["Nowhere"]}, "topics"),
        ({"name": "bad name"}, "name"),
        ({"name": "x", "splits": ["nope"]}, "splits"),
        ({"name": "x", "test_share": 2}, "test_share"),
    ],
)
def test_it_refuses_a_bad_build_body(boss: Client, body: dict, field: str) -> None:
    make_procedures(3)
    response = boss.post("/api/jobs/", {"kind": "build_tasks", **body}, content_type="application/json")
    assert response.status_code == 400 and field in response.json()
    assert not Job.objects.exists()


def test_it_refuses_the_api_to_staff_without_the_run_permission() -> None:
    client = Client()
    client.force_login(make_user(is_staff=True))
    response = client.post(
        "/api/jobs/", {"kind": "build_tasks", "name": "x"}, content_type="application/json"
    )
    assert response.status_code == 403


def test_it_builds_inline_from_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    make_procedures()
    call_command(
        "build_tasks", "cmd-set", "--seed", "5", "--topic", "Health", "--topic", "Travel", "--inline"
    )
    out = capsys.readouterr().out
    task_set = TaskSet.objects.get(name="cmd-set")
    assert f"job {task_set.job_id} succeeded" in out
    assert "step_inference:" in out and "candidates-only baseline" in out
    assert task_set.seed == 5 and task_set.selection["topic_names"] == ["Health", "Travel"]
    assert task_set.examples.exists()


def test_it_queues_from_the_command_without_running() -> None:
    make_procedures(3)
    call_command("build_tasks", "queued", "--split", "bench", "--test-share", "0.5")
    task_set = TaskSet.objects.get(name="queued")
    assert task_set.job is not None and task_set.job.status == JobStatus.QUEUED
    assert task_set.selection["test_share"] == 0.5


def test_it_names_an_unknown_topic_in_the_command() -> None:
    with pytest.raises(CommandError, match="--topic: no topic named 'Nowhere'"):
        call_command("build_tasks", "x", "--topic", "Nowhere")
