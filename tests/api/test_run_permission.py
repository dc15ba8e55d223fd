"""Starting, cancelling or retrying work needs jobs.add_job, on every endpoint that does it (#19 item 24).

The URL conf is walked: every API write must be listed in RUN_WRITES with a request that really starts (or
cancels) work, so that a new one cannot be added without this test trying it. A staff user without the
permission gets a 403 from each and nothing is started; a user with it starts the work with the very same
request (so the 403 is the permission's, not a bad body's). Every other route of the site, POSTed by the same
user, starts nothing either (job_create refuses a user without the permission: the one place that knows it).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from h2e_site.jobs.models import Job, JobStatus
from judging.job_types import GENERATE, IMPORT
from mining.config import run_config_from_mapping
from mining.job_kinds import MINE
from mining.models import MiningRun
from mining.runs import mining_run_create
from tests.api.routes import Route, routes
from tests.factories import logged_in, make_job, make_procedure, make_runner, make_user
from tests.judging.runnable import make_runnable_generator
from tests.mining.canned import loopback_config, make_document

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class World:
    generator_id: str
    queued_job: Job
    failed_job: Job
    run: MiningRun


@dataclass(frozen=True)
class Write:
    """A request that starts (or cancels) work, and what it does when allowed."""

    values: Callable[[World], dict[str, object]]
    send: Callable[[Client, str, World], Any]
    started: Callable[[World], bool]  # after the allowed request: did the work start (or stop)?


def _json(body: Callable[[World], dict[str, object]]) -> Callable[[Client, str, World], Any]:
    return lambda client, url, world: client.post(url, body(world), content_type="application/json")


def _post(client: Client, url: str, world: World) -> Any:
    return client.post(url)


def _upload(client: Client, url: str, world: World) -> Any:
    bench = io.BytesIO(b'{"source_example_id": "x"}\n')
    bench.name = "bench.jsonl"
    return client.post(url, {"files": [bench], "kind": "bench"})


def _new_job(kind: str) -> Callable[[World], bool]:
    return lambda world: (
        Job.objects.filter(kind=kind, status=JobStatus.QUEUED).exclude(pk=world.queued_job.pk).exists()
    )


RUN_WRITES: dict[tuple[str, str], Write] = {
    ("api:job-list", "POST"): Write(
        lambda w: {},
        _json(lambda w: {"kind": "generate", "generator_id": w.generator_id, "limit": 1}),
        _new_job(GENERATE),
    ),
    ("api:job-cancel", "POST"): Write(
        lambda w: {"pk": w.queued_job.pk},
        _post,
        lambda w: Job.objects.get(pk=w.queued_job.pk).status == JobStatus.CANCELLED,
    ),
    ("api:job-retry", "POST"): Write(
        lambda w: {"pk": w.failed_job.pk},
        _post,
        lambda w: True,  # nothing failed to retry: answered 409 once the permission is there
    ),
    ("api:imports", "POST"): Write(lambda w: {}, _upload, _new_job(IMPORT)),
    ("mining-api:run-start", "POST"): Write(lambda w: {"pk": w.run.pk}, _post, _new_job(MINE)),
    ("mining-api:run-rerun", "POST"): Write(
        lambda w: {"pk": w.run.pk}, _json(lambda w: {"stage": "filter"}), _new_job(MINE)
    ),
}


# API writes that start no work (no job): they change a study's rows in the request, as its staff page does.
# (A calibration round over a frame of more than ROUND_JOB_FRAME examples is a job, with its own permission
# test: tests/annotation/test_calibration_round_job.py.)
# The reward service (POST /api/reward/) asks a judge within the request and starts no job; it has a
# permission of its own (judging.request_reward), tried in tests/judging/test_reward_api.py.
NO_WORK = {("api:study-calibration-rounds", "POST"), ("api:reward", "POST")}


@pytest.fixture
def world() -> World:
    make_procedure()
    make_document("perm-doc")
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config("http://127.0.0.1:9/v1")), enqueue=False
    )
    Job.objects.filter(pk=run.job_id).update(status=JobStatus.SUCCEEDED)
    return World(
        generator_id=make_runnable_generator().generator_id,
        queued_job=make_job(status=JobStatus.QUEUED, kind=GENERATE),
        failed_job=make_job(status=JobStatus.FAILED, kind=GENERATE),
        run=run,
    )


def _api_writes() -> list[tuple[Route, str]]:
    return [
        (route, method)
        for route in routes()
        if route.is_api and not route.is_format_suffix
        for method in sorted(route.writes)
    ]


def test_it_knows_every_api_write() -> None:
    found = {(route.name, method) for route, method in _api_writes()}
    unlisted = found - set(RUN_WRITES) - NO_WORK
    assert not unlisted, f"new API writes: add them to RUN_WRITES with a request that starts work: {unlisted}"
    assert set(RUN_WRITES) <= found, set(RUN_WRITES) - found


@pytest.mark.parametrize("key", sorted(RUN_WRITES), ids=lambda key: f"{key[1]} {key[0]}")
def test_it_starts_work_only_with_the_run_permission(
    key: tuple[str, str], world: World, django_capture_on_commit_callbacks: Any
) -> None:
    write = RUN_WRITES[key]
    route = next(route for route, method in _api_writes() if (route.name, method) == key)
    url = route.url(write.values(world))
    jobs_before = set(Job.objects.values_list("pk", "status"))
    with django_capture_on_commit_callbacks(execute=False):
        refused = write.send(logged_in(make_user(is_staff=True)), url, world)
    assert refused.status_code == 403, (url, refused.status_code, refused.content[:300])
    assert "add job" in refused.json()["detail"]
    assert set(Job.objects.values_list("pk", "status")) == jobs_before  # nothing started, nothing cancelled
    with django_capture_on_commit_callbacks(execute=False):
        allowed = write.send(logged_in(make_runner()), url, world)
    assert allowed.status_code < 500 and allowed.status_code != 403, (url, allowed.content[:300])
    assert write.started(world), (url, allowed.status_code, allowed.content[:300])


def test_no_route_of_the_site_starts_work_for_a_user_without_the_permission(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """Every route but the admin's (whose run actions check the permission and are tried in the admin tests),
    POSTed empty and with the known bodies: no job is created or cancelled, no 5xx; the pages that start
    work answer 403."""
    starts_work = {
        "goal_step:task_set_build",
        "jobs:job_cancel",
        "jobs:job_retry",
        "annotation:step_type_models_classify",
    }
    jobs_before = set(Job.objects.values_list("pk", "status"))
    user = make_user(is_staff=True)
    client = Client()
    tried = set()
    for route in routes():
        if route.template.startswith("admin/") or route.is_format_suffix:
            continue
        values = {"pk": world.queued_job.pk} if route.name.startswith("jobs:") else {}
        client.force_login(user)  # again: a route may have signed it out
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(route.url(values), {"name": "perm-set", "seed": 0, "splits": ["bench"]})
        assert response.status_code < 500, (route.template, response.status_code)
        if route.name in starts_work:
            assert response.status_code == 403, (route.template, response.status_code)
        tried.add(route.name)
    assert starts_work <= tried
    assert set(Job.objects.values_list("pk", "status")) == jobs_before
