"""The study engine knows kinds only through the registry (issue #21 item 1): its modules name no critical-
failures field or relation, no member of StudyKind, and no kind's submission; the kinds' own endpoints are
mounted through their `api_urls`; a judge's disagreements with a study's humans and the form in the kind's
part of the study page are the kind's (the critical-failures kind's; another kind's study answers a 404
saying why)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import resolve, reverse

from annotation.base.registry import KINDS
from tests.annotation.step_types.labelled import step_study
from tests.factories import make_judge

ROOT = Path(__file__).resolve().parents[2]
ENGINE = [
    "annotation/flow/services/__init__.py",
    "annotation/flow/services/studies.py",
    "annotation/flow/services/participants.py",
    "annotation/flow/services/assignments.py",
    "annotation/flow/services/submissions.py",
    "annotation/base/selectors.py",
    "annotation/base/posted.py",
    "annotation/flow/forms.py",
    "annotation/base/types.py",
    "annotation/flow/views/agreement.py",
    "annotation/flow/views/annotator.py",
    "annotation/flow/views/studies.py",
]  # annotation/mounting/api.py too, once its judge-side endpoints (report card, calibration) leave it
# The critical-failures kind's fields, relations, types and modules; any kind named by its StudyKind member.
KIND_WORDS = re.compile(
    r"has_failure|n_failures|failure_number|generation__|item\.generation|FailureInput|critical_failures"
    r"|StudyKind\.[A-Z]"
)


def test_the_engine_modules_name_no_kinds_fields() -> None:
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in ENGINE
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if KIND_WORDS.search(line)
    ]
    assert found == []


def test_each_kinds_agreement_endpoint_is_its_own_and_mounted() -> None:
    for spec in KINDS.values():
        patterns = spec.api_urls()
        assert not spec.agreement_api or spec.agreement_api in {pattern.name for pattern in patterns}
        for pattern in patterns:
            kwargs = {name: "a-slug" for name in pattern.pattern.converters}  # type: ignore[attr-defined]
            assert resolve(reverse(pattern.name, kwargs=kwargs)).url_name == pattern.name


@pytest.mark.django_db
def test_a_judges_disagreements_with_another_kinds_study_are_a_404_naming_it(admin_client: Client) -> None:
    study = step_study("no-judges")
    judge = make_judge(model="org/any")
    response = admin_client.get(reverse("agreement:judge_disagreements", args=[study.slug, judge.judge_id]))
    assert response.status_code == 404
    reason = "No judge gives verdicts on the items of a step-types study (no-judges)."
    assert response.content.decode() == reason


@pytest.mark.django_db
def test_a_post_to_the_study_page_of_a_kind_without_a_form_there_is_a_404(admin_client: Client) -> None:
    study = step_study("no-form")
    url = reverse("annotation:study_calibration_round", args=[study.slug])
    response = admin_client.post(url, {"size": "1"})
    assert response.status_code == 404
    assert response.content.decode() == "A step-types study's page has no form to post (no-form)."
