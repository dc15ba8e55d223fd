"""A task set's "Answer with a model" (issue #19 item 13): a model config chosen on the page starts an
answer_tasks job (jobs.add_job), shown as a live job row; once it has run, the page shows the model's
accuracy. The embedded model's config runs here against a loopback server (H2E_LOCAL_LLM_URL)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from goal_step.answer import answer_job_run
from goal_step.job_kinds import ANSWER_TASKS
from goal_step.models import TaskAnswer, TaskModel, TaskSet
from h2e_site.jobs.models import Job, JobStatus
from tests.annotation.goal_step.conftest import make_task_set
from tests.factories import make_user
from tests.llm_server import LoopbackLLM

pytestmark = pytest.mark.django_db
SMOL = "configs/goal_step/smollm2-local.yaml"


@pytest.fixture
def task_set() -> TaskSet:
    return make_task_set("tasks-a")


def answer_url(task_set: TaskSet) -> str:
    return reverse("goal_step:task_set_answer", args=[task_set.name])


def test_it_answers_from_the_page_and_shows_the_job_then_the_accuracy(
    admin_client: Client, task_set: TaskSet, llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2E_LOCAL_LLM_URL", llm_server.base_url)
    llm_server.responder = lambda body: "B"
    page = admin_client.get(reverse("goal_step:task_set", args=[task_set.name])).content.decode()
    assert f'action="{answer_url(task_set)}"' in page and f'value="{SMOL}"' in page
    assert 'value="configs/generators/gpt-4.1-openai.yaml"' in page  # generator configs answer too

    response = admin_client.post(answer_url(task_set), {"config": SMOL, "split": "test"})

    assert response.status_code == 302 and response["Location"] == reverse(
        "goal_step:task_set", args=["tasks-a"]
    )
    job = Job.objects.get()
    assert job.kind == ANSWER_TASKS and job.total == 4 and job.parameters["candidates_only"] is False
    page = admin_client.get(response["Location"]).content.decode()
    assert f'id="job-{job.pk}"' in page and 'hx-trigger="every 2s"' in page  # the live row
    assert answer_job_run(job_id=job.pk).status == JobStatus.SUCCEEDED  # type: ignore[union-attr]
    model = TaskModel.objects.get()
    assert model.is_demo_model and TaskAnswer.objects.filter(model=model).count() == 4
    page = admin_client.get(reverse("goal_step:task_set", args=[task_set.name])).content.decode()
    # "B" is right for one of the two step inferences, the goal inference and the step ordering
    assert model.model_id in page and "1 of 2 right" in page and page.count("1 of 1 right") == 2
    again = admin_client.post(answer_url(task_set), {"config": SMOL, "split": "test"})
    assert again.status_code == 400 and "nothing to answer" in again.content.decode()
    only = admin_client.post(answer_url(task_set), {"config": SMOL, "split": "test", "candidates_only": "on"})
    assert only.status_code == 302 and Job.objects.latest("pk").parameters["candidates_only"] is True


def test_it_refuses_what_it_cannot_run_and_names_the_field(admin_client: Client, task_set: TaskSet) -> None:
    for data in (
        {"config": "configs/goal_step/../judges/smollm2-local.yaml", "split": "test"},
        {"config": "", "split": "test"},
        {"config": SMOL, "split": "dev"},
    ):
        response = admin_client.post(answer_url(task_set), data)
        assert response.status_code == 400, data
        assert 'class="text-error small"' in response.content.decode(), data
    assert (
        admin_client.post(reverse("goal_step:task_set_answer", args=["nope"]), {"config": SMOL}).status_code
        == 404
    )
    assert admin_client.get(answer_url(task_set)).status_code == 405
    assert not Job.objects.exists()


def test_it_needs_the_add_job_permission(client: Client, task_set: TaskSet) -> None:
    staff = make_user(is_staff=True)
    client.force_login(staff)
    page = client.get(reverse("goal_step:task_set", args=[task_set.name])).content.decode()
    assert answer_url(task_set) not in page
    assert client.post(answer_url(task_set), {"config": SMOL, "split": "test"}).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="add_job"))
    client.force_login(staff)
    assert client.post(answer_url(task_set), {"config": SMOL, "split": "test"}).status_code == 302
    assert Job.objects.get().created_by == staff
    outsider = Client()
    outsider.force_login(make_user(username="outsider"))
    assert outsider.post(answer_url(task_set), {"config": SMOL}).status_code == 403
