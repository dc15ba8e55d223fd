"""Every API endpoint, found by walking the URL conf (#19 items 3 and 25): it answers OPTIONS and renders in
the browsable API (Accept: text/html, ?format=api) without a server error, and a JSON body that is not an
object ([1, 2], "build_tasks") is refused with a 400 naming the body on every endpoint that reads one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from h2e_site.jobs.models import Job
from mining.config import run_config_from_mapping
from mining.runs import mining_run_create
from tests.api.routes import Route, routes
from tests.factories import make_job, make_scored_world
from tests.mining.canned import loopback_config, make_document

pytestmark = pytest.mark.django_db

NOT_OBJECTS = ["[1, 2]", '"build_tasks"', "42", "null"]


@pytest.fixture
def values() -> dict[str, object]:
    """A row for each kind of path parameter, so that detail endpoints answer with a row, not a 404."""
    world = make_scored_world()
    make_document("every-doc")
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config("http://127.0.0.1:9/v1")), enqueue=False
    )
    judge = world["judges"][0]
    return {"pk": run.pk, "judge_id": judge.judge_id, "job_pk": make_job().pk}


def _api_routes() -> list[Route]:
    return [route for route in routes() if route.is_api and not route.is_format_suffix and route.drf_methods]


def _pk_for(route: Route, values: dict[str, object]) -> dict[str, object]:
    if route.name.startswith("api:job-"):
        return {**values, "pk": values["job_pk"]}
    return values


def test_it_walks_the_whole_api() -> None:
    names = {route.name for route in _api_routes()}
    assert {"api:job-list", "api:leaderboard", "mining-api:run-start", "judge-report-card-api"} <= names


def test_every_endpoint_answers_options_and_the_browsable_api(admin_client: Client, values: dict) -> None:
    answered = []
    for route in _api_routes():
        url = route.url(_pk_for(route, values))
        options = admin_client.options(url)
        assert options.status_code < 500, (url, options.status_code)
        if "GET" in route.drf_methods:
            for response in (
                admin_client.get(url, {"format": "api"}),
                admin_client.get(url, HTTP_ACCEPT="text/html"),
            ):
                assert response.status_code < 500, (url, response.status_code)
                if route.name not in {
                    "api-schema",
                    "api-docs",
                }:  # the schema and its docs page render their own
                    assert response["Content-Type"].startswith("text/html"), url
        answered.append(url)
    assert len(answered) >= 20, answered


# Writes that take no body: what a client sends is not read (they start, cancel or retry what the path names).
NO_BODY = {"mining-api:run-start", "api:job-cancel", "api:job-retry"}


def test_every_endpoint_refuses_a_body_that_is_not_an_object(
    admin_client: Client, values: dict, django_capture_on_commit_callbacks: Any
) -> None:
    jobs = Job.objects.count()
    tried = 0
    for route in _api_routes():
        for method in sorted(route.writes):
            if route.name in NO_BODY:
                continue
            url = route.url(_pk_for(route, values))
            for body in NOT_OBJECTS:
                with django_capture_on_commit_callbacks(execute=False):
                    response = admin_client.generic(method, url, body, content_type="application/json")
                if route.name == "api:imports":  # multipart only: JSON is not its media type
                    assert response.status_code == 415, (url, body, response.status_code)
                    continue
                assert response.status_code == 400, (url, body, response.status_code, response.content[:200])
                assert "must be a JSON object" in response.json()["detail"], response.json()
                tried += 1
    assert tried >= 8
    assert Job.objects.count() == jobs  # nothing started
