"""Messages that name the right thing (issue #19 item 17): the reading gate's refusals in the study kind's
words, and /api/agreement/ naming the kind of a study it does not cover."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.registry import KINDS
from annotation.flow import services
from annotation.kinds.multiple_choice.spec import NO_STEPS
from tests.annotation.conftest import make_study, qualified
from tests.annotation.goal_step.test_mc_kind import make_mc_study
from tests.annotation.step_types.test_kind import make_step_study

pytestmark = pytest.mark.django_db


def test_a_multiple_choice_item_says_it_has_no_steps_to_reveal() -> None:
    study = make_mc_study()
    assignment = services.assignment_next(participant=qualified(study, 1))
    assert assignment is not None
    for _ in ("before the acknowledgement", "after it"):
        with pytest.raises(services.Refused) as refused:
            services.assignment_reveal_step(assignment=assignment, number=1)
        assert refused.value.message == NO_STEPS and "step 1" not in refused.value.message
        services.assignment_acknowledge_goal(assignment=assignment)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (make_study, "Read the L2 steps in order: the next one is step 1."),
        (make_step_study, "Read the steps in order: the next one is step 1."),
    ],
)
def test_a_step_out_of_order_names_the_next_step_in_the_kinds_words(make: object, expected: str) -> None:
    study = make()  # type: ignore[operator]
    assignment = services.assignment_next(participant=qualified(study, 1))
    services.assignment_acknowledge_goal(assignment=assignment)
    with pytest.raises(services.Refused, match=expected):
        services.assignment_reveal_step(assignment=assignment, number=2)


def test_every_kind_words_every_refusal_of_the_reading_gate() -> None:
    for spec in KINDS.values():
        texts = spec.reading
        assert texts.out_of_order.format(next=3) and texts.unread.format(read=1, total=2), spec.kind
        assert texts.before_goal and texts.unacknowledged, spec.kind


def test_the_agreement_api_names_the_kind_of_a_study_it_does_not_cover(admin_client: Client) -> None:
    mc, steps = make_mc_study(), make_step_study()
    url = reverse("agreement-api")
    answer = admin_client.get(url, {"study": mc.slug})
    assert answer.status_code == 400
    message = answer.json()["study"][0]
    assert message.startswith(f"{mc.slug}: a multiple-choice study") and f"/agreement/{mc.slug}/" in message
    assert "step-types" not in message
    message = admin_client.get(url, {"study": steps.slug}).json()["study"][0]
    assert (
        message.startswith(f"{steps.slug}: a step-types study")
        and "/api/agreement/step-types/?study=" in message
    )


MAKERS = {"critical_failures": make_study, "step_types": make_step_study, "multiple_choice": make_mc_study}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_the_agreement_api_refuses_a_study_by_its_kind_in_the_registry(
    admin_client: Client, kind: str
) -> None:
    """The study's own kind names it, and its agreement is where the registry says (its own endpoint, if it
    has one, and its page); a multiple-choice slug is never called a step-types study."""
    spec, study = KINDS[kind], MAKERS[kind]()  # type: ignore[operator]
    answer = admin_client.get(reverse("agreement-api"), {"study": study.slug})
    if spec.agreement_api == "agreement-api":
        assert answer.status_code == 200 and answer.json()["studies"] == [study.slug]
        return
    assert answer.status_code == 400
    message = answer.json()["study"][0]
    assert message.startswith(f"{study.slug}: a {spec.noun} study (this endpoint covers critical-failures ")
    page = reverse("agreement:study", args=[study.slug])
    own_api = f"{reverse(spec.agreement_api)}?study={study.slug} or " if spec.agreement_api else ""
    assert message.endswith(f"; see {own_api}{page}")
    others = {other.noun for other in KINDS.values() if other.kind not in (kind, "critical_failures")}
    assert not any(f"a {noun} study" in message for noun in others)


def test_each_kind_draws_its_own_agreement_page(admin_client: Client) -> None:
    templates = {
        "critical_failures": "annotation/study_agreement.html",
        "step_types": "annotation/step_types_agreement.html",
        "multiple_choice": "annotation/mc_validation.html",
    }
    for kind, make in MAKERS.items():
        study = make()  # type: ignore[operator]
        page = admin_client.get(reverse("agreement:study", args=[study.slug]))
        assert page.status_code == 200, kind
        assert templates[kind] in {t.name for t in page.templates}, kind
