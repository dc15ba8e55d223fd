"""The study builder through the kind registry (issue #21 item 1): each kind's own selection fields
(`StudyKindSpec.builder_fields`) sit after the shared topics, in the kind's order, with no other kind's; the
kind's refusals (`builder_clean`) land on its field and store nothing; its `selection_from` is what the
study stores."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Study
from annotation.base.registry import KINDS, StudyKind
from tests.annotation.test_builder_refusals import _builder, _post
from tests.factories import make_generation, make_judge, make_procedure

pytestmark = pytest.mark.django_db


def _field_names(html: str) -> list[str]:
    """The form's input names in page order, each once."""
    names = re.findall(r'name="([a-z_]+)"', html)
    return list(dict.fromkeys(n for n in names if n != "csrfmiddlewaretoken"))


@pytest.mark.parametrize("kind", list(KINDS))
def test_builder_shows_the_kinds_fields_after_the_topics(boss: Client, kind: str) -> None:
    response = boss.get(reverse("annotation:study_create") + f"?kind={kind}")
    assert response.status_code == 200
    form = response.context["form"]
    own = list(KINDS[kind].builder_fields())
    assert form.kind_fields == own and own
    names = list(form.fields)
    at = names.index("topics") + 1
    assert names[at : at + len(own)] == own
    others = {name for other in KINDS if other != kind for name in KINDS[other].builder_fields()} - set(own)
    assert not others & set(names)
    shown = _field_names(response.content.decode())
    assert [n for n in shown if n in own] == own
    assert shown.index("topics") < shown.index(own[0]) < shown.index("sample_size")


def test_one_disagreeing_judge_is_refused_on_its_field(boss: Client) -> None:
    judge = make_judge()
    data = _builder(StudyKind.CRITICAL_FAILURES, disagreeing_judges=[str(judge.pk)])
    response = _post(boss, data)
    assert response.status_code == 400
    assert response.context["form"].errors["disagreeing_judges"] == ["Choose at least two judges, or none."]
    assert not Study.objects.exists()


@pytest.mark.parametrize(
    ("kind", "fields", "stored"),
    [
        (StudyKind.STEP_TYPES, {"splits": ["bench"]}, {"splits": ["bench"], "task_set": ""}),
        (StudyKind.CRITICAL_FAILURES, {}, {"splits": [], "calibration_design": ""}),
    ],
)
def test_the_kinds_part_of_the_selection_is_stored(
    boss: Client, kind: str, fields: dict[str, Any], stored: dict[str, Any]
) -> None:
    procedure = make_procedure(goal="Goal", steps=["a", "b", "c", "d"], topic="Home")
    make_generation(procedure=procedure)
    response = _post(boss, _builder(kind, **fields))
    assert response.status_code == 302, response.context and response.context["form"].errors
    selection = Study.objects.get().selection
    assert {key: selection[key] for key in stored} == stored
