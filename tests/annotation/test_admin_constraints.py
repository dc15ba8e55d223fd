"""The admin checks every constraint of a model before saving, those naming a read-only field included
(h2e_site.bounds.ConstrainedModelForm): a refused row is a form error, never an IntegrityError (500)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Assignment
from annotation.flow import services
from tests.annotation.conftest import make_study, qualified
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _change_form_data(client: Client, url: str) -> dict[str, str]:
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data: dict[str, str] = {}
    for bound in form:
        value = bound.value()
        if value is not None and not bound.field.disabled:
            data[bound.html_name] = str(value.pk if hasattr(value, "pk") else value)
    return data


def test_it_refuses_more_steps_read_than_the_l2_has_on_the_form() -> None:
    study = make_study(n_items=1, k=1)
    assignment = services.assignment_next(participant=qualified(study, 1))
    assert assignment is not None
    staff = make_user(is_staff=True)
    staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    url = reverse("admin:annotation_assignment_change", args=[assignment.pk])
    data = {**_change_form_data(client, url), "n_revealed": str(assignment.n_reading_steps + 1)}

    response = client.post(url, data)

    assert response.status_code == 200  # the form again, with the refusal
    errors = response.context["adminform"].form.errors.as_text()
    assert "assignment_revealed_le_steps" in errors or "steps" in errors, errors
    assert Assignment.objects.get(pk=assignment.pk).n_revealed == assignment.n_revealed
