"""Fuzzing the API's job-starting bodies (POST /api/jobs/ for every kind of job): any value in any field is a
400 naming it or a job, never a 500; a body too deep, too long or holding NUL is refused. The admin's and the
site's forms are tests/test_fuzz_staff_forms.py's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st
from rest_framework import serializers

from goal_step.models import TaskSet
from h2e_site.jobs.api import _creatable
from h2e_site.jobs.models import Job
from tests.fuzz_world import make_admin_world
from tests.test_fuzz_staff_forms import (
    BIG_NUMBERS,
    DEEP_ARRAY,
    DEEP_OBJECT,
    HUGE_JSON,
    SENT,
    _assert_no_server_error,
    _examples,
    _shown,
)

pytestmark = pytest.mark.django_db

# --- the API's job-starting bodies ----------------------------------------------------------------------

BODY_VALUES: list[Any] = [
    *BIG_NUMBERS,
    1e300,
    "",
    "\x00",
    "a\x00b",
    "x" * 70_000,
    [],
    ["\x00"],
    [2**63],
    {"a": "\x00"},
    "fuzz-taken",
]


@pytest.fixture
def admin_world() -> dict[str, Any]:
    return make_admin_world()


def _serializer_fields(kind: str) -> dict[str, serializers.Field]:
    from django.utils.module_loading import import_string

    return dict(import_string(_creatable()[kind].create_serializer)().fields)


def _must_refuse_body(serializer_field: serializers.Field, value: Any) -> bool:
    child = getattr(serializer_field, "child", None)
    if isinstance(value, list) and child is not None:
        return any(_must_refuse_body(child, v) for v in value)
    if "\x00" in json.dumps(value):
        return True
    if isinstance(serializer_field, serializers.IntegerField | serializers.FloatField):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return not (value == "" and not serializer_field.required)
        low = serializer_field.min_value if serializer_field.min_value is not None else -(2**31)
        high = serializer_field.max_value if serializer_field.max_value is not None else 2**31 - 1
        return not low <= value <= high
    return False


def test_it_survives_any_value_in_every_job_body(
    admin_world: dict[str, Any], boss: Client, django_capture_on_commit_callbacks: Any
) -> None:
    kinds = sorted(_creatable())
    for kind in kinds:  # every number of a body has both ends
        for name, serializer_field in _serializer_fields(kind).items():
            number = getattr(serializer_field, "child", serializer_field)
            if isinstance(number, serializers.IntegerField | serializers.FloatField):
                assert number.max_value is not None and number.min_value is not None, (kind, name)

    @_examples(100)
    @given(data=st.data())
    def post(data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(kinds), label="kind")
        fields = _serializer_fields(kind)
        name = data.draw(st.sampled_from(sorted(set(fields) - {"kind"})), label="field")
        value = data.draw(st.sampled_from(BODY_VALUES), label="value")
        body = {"kind": kind, **admin_world["bodies"].get(kind, {}), name: value}
        before = (Job.objects.count(), TaskSet.objects.count())
        with django_capture_on_commit_callbacks(execute=False):
            response = boss.post("/api/jobs/", body, content_type="application/json")
        SENT[f"POST /api/jobs/ {kind}"] = SENT.get(f"POST /api/jobs/ {kind}", 0) + 1
        _assert_no_server_error(response, kind, name, value)
        if _must_refuse_body(fields[name], value):
            assert response.status_code == 400, (kind, name, _shown(value), response.status_code)
        if response.status_code >= 400:
            assert (Job.objects.count(), TaskSet.objects.count()) == before
        if response.status_code == 400 and _must_refuse_body(fields[name], value):
            assert name in response.json(), (kind, name, _shown(value), response.content[:300])

    post()


@pytest.mark.parametrize(
    "body", [DEEP_ARRAY, DEEP_OBJECT, HUGE_JSON, '{"kind": "build_tasks", "name": "a\\u0000"}']
)
def test_it_refuses_a_body_too_deep_too_long_or_holding_nul(boss: Client, body: str) -> None:
    for path in ("/api/jobs/", "/api/mining/runs/1/rerun/"):
        response = boss.post(path, body, content_type="application/json")
        assert response.status_code in (400, 404), (path, body[:40], response.status_code)
        assert b"Traceback" not in response.content


# --- fixtures ------------------------------------------------------------------------------------------
