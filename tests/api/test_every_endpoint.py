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
from tests.factories import logged_in, make_job, make_scored_world, make_user
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


def _each_operation(values: dict) -> list[tuple[str, str, Route]]:
    """(method, url, route) for every operation of the API, its routers' format-suffix copies (`.5`)
    included."""
    operations = []
    for route in routes():
        if not route.is_api or not route.drf_methods or route.name in {"api-schema", "api-docs"}:
            continue  # the schema and its docs page answer in their own formats (YAML, HTML), refusals too
        url = route.url({**_pk_for(route, values), "format": "5"})
        operations += [(method, url, route) for method in sorted(route.drf_methods - {"OPTIONS"})]
    not_found = Route("api/no-such-endpoint/", "", None, {})  # no route takes it: the API's own JSON 404
    operations.append(("GET", "/api/no-such-endpoint/", not_found))
    return operations


def test_without_credentials_every_operation_is_refused_before_anything_else(
    client: Client, values: dict
) -> None:
    """#31 item 18: a NUL in the query (400) or a format suffix no renderer has (`.5`: 404) was answered
    before the credentials were checked; now 401/403 first, in JSON, for every operation."""
    outsider = logged_in(make_user(is_staff=False))
    checked = 0
    suffixes = 0
    for method, url, route in _each_operation(values):
        for who in (client, outsider):
            for sent in (f"{url}?q=a%00b", url) if route.is_format_suffix else (f"{url}?q=a%00b",):
                response = who.generic(method, sent)
                assert response.status_code in {401, 403}, (method, sent, response.status_code)
                assert response["Content-Type"] == "application/json", (
                    method,
                    sent,
                    response["Content-Type"],
                )
                checked += 1
        suffixes += route.is_format_suffix
    assert checked >= 60 and suffixes >= 5


def test_staff_get_json_errors_for_a_nul_and_an_unknown_format(admin_client: Client, values: dict) -> None:
    nul_refused = suffix_refused = 0
    for method, url, route in _each_operation(values):
        with_nul = admin_client.generic(method, f"{url}?q%00=1")
        assert with_nul.status_code == 400, (method, url, with_nul.status_code)
        assert with_nul["Content-Type"] == "application/json", (method, url, with_nul["Content-Type"])
        assert method == "HEAD" or "NUL character" in with_nul.json()["detail"], (method, url)
        nul_refused += 1
        if route.is_format_suffix and method == "GET":
            unknown = admin_client.get(url)
            assert unknown.status_code == 404 and unknown["Content-Type"] == "application/json", url
            suffix_refused += 1
    assert nul_refused >= 30 and suffix_refused >= 5
    page = admin_client.get("/jobs/?q=%00")  # a page: plain text, as before
    assert page.status_code == 400 and page["Content-Type"].startswith("text/plain")


# The operations whose schema cannot state every rule they keep (tests/api/test_schemathesis.py lets them
# answer 400 to a request the schema allows): each states those rules in its description.
RULES_UNSTATED = {
    ("post", "/api/jobs/"): "a row the body names must exist",
    ("post", "/api/imports/"): "at least one file",
    ("post", "/api/mining/runs/{id}/rerun/"): "run config loader",
    ("get", "/api/agreement/step-types/"): "exactly one of `study` and `label_set`",
    ("get", "/api/calibration/plan/"): "has not judged the generator",
}


def test_rules_the_schema_cannot_state_are_in_the_operations_description(admin_client: Client) -> None:
    schema = admin_client.get("/api/schema/", {"format": "json"}).json()
    for (method, path), rule in RULES_UNSTATED.items():
        description = schema["paths"][path][method].get("description", "")
        assert "Rules the schema cannot state" in description and rule in description, (path, description)
