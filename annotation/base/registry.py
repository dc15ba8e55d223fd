"""The registered study kinds, as the engine reads them: each kind's folder (annotation/kinds/<kind>/)
registers
its spec here when the registry (annotation/kinds/__init__.py) loads it at app start, so the engine, which
sits
below the kinds, asks `kind_for(study)` without importing any kind."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.module_loading import import_string

from annotation.base.models import Study
from annotation.base.spec import StudyKindSpec
from annotation.base.types import KINDS_INDEX, KindEntry

KINDS: dict[str, StudyKindSpec] = {}


def register(spec: StudyKindSpec) -> StudyKindSpec:
    """Registers a kind's spec under its name (and the kind's entry every page reads its label from)."""
    if spec.kind in KINDS:
        raise ValueError(f"two study kinds are named {spec.kind!r}")
    KINDS[spec.kind] = spec
    KINDS_INDEX[spec.kind] = KindEntry(spec.label, spec.description, spec.noun, spec.agreement_api)
    return spec


def kind_for(study: Study | str) -> StudyKindSpec:
    """The kind of a study (or of a kind's name)."""
    return KINDS[study.kind if isinstance(study, Study) else study]


# The study page's parts that operations above the engine add (the Prolific section: annotation/mounting
# registers its context function), as dotted paths, imported when a study page is drawn.
STUDY_PAGE_PARTS: list[str] = []


def study_page_parts(request: HttpRequest, study: Study) -> dict[str, Any]:
    """The context every registered part adds to a study's page."""
    context: dict[str, Any] = {}
    for path in STUDY_PAGE_PARTS:
        context.update(import_string(path)(request, study))
    return context
