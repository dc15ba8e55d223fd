"""The researcher's step-types pages in Chromium (#13 item 6): the study's agreement page (Table 6 layout,
per-topic columns, counts, contradiction rate), the model table (Table 3 layout) with a classifier's
predictions, and the study page, at desktop and phone widths, with screenshots; no console error, no page
that scrolls sideways on a phone beyond its tables' own scroll boxes."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.kinds.step_types.models import StepTypeClassifier, StepTypePrediction
from tests.annotation.step_types.labelled import table6_study
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, screenshot

pytestmark = pytest.mark.browser


def _predict(study: Any) -> StepTypeClassifier:
    """A classifier that says "holds" for every sequential candidate and nothing else, and one unparsable."""
    classifier = StepTypeClassifier.objects.create(classifier_id="cls-demo", model="org/step-model")
    candidates = [label.candidate for label in _labels(study)]
    for i, candidate in enumerate({c.pk: c for c in candidates}.values()):
        holds = None if i == 0 else candidate.step_type == "sequential"
        StepTypePrediction.objects.create(classifier=classifier, candidate=candidate, holds=holds)
    return classifier


def _labels(study: Any) -> list[Any]:
    from annotation.kinds.step_types.models import StepTypeLabel

    return list(StepTypeLabel.objects.filter(annotation__study=study).select_related("candidate"))


def _no_sideways_scroll(page: Any, name: str) -> None:
    overflow = page.evaluate(PAGE_OVERFLOW)
    assert overflow <= 0, f"{name}: the page scrolls sideways by {overflow} px"


def test_the_step_types_pages_at_desktop_and_phone_widths(staff_page: Any, live_server: Any) -> None:
    study, _ = table6_study()
    _predict(study)
    errors: list[str] = []
    staff_page.on("pageerror", lambda error: errors.append(str(error)))
    pages = [
        ("agreement", f"/agreement/{study.slug}/", "Table 6"),
        ("models", f"/studies/{study.slug}/step-types/models/", "org/step-model"),
        ("study", f"/studies/{study.slug}/", "Step types"),
    ]
    for name, path, text in pages:
        staff_page.set_viewport_size(DESKTOP)
        staff_page.goto(f"{live_server.url}{path}")
        staff_page.get_by_text(text).first.wait_for()
        screenshot(staff_page, f"step-types-{name}-desktop")
        staff_page.set_viewport_size(PHONE)
        staff_page.reload()
        staff_page.get_by_text(text).first.wait_for()
        screenshot(staff_page, f"step-types-{name}-phone")
        _no_sideways_scroll(staff_page, name)
    assert not errors, errors
