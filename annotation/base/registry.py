"""The registered study kinds, as the engine reads them: each kind's folder (annotation/kinds/<kind>/)
registers
its spec here when the registry (annotation/kinds/__init__.py) loads it at app start, so the engine, which
sits
below the kinds, asks `kind_for(study)` without importing any kind."""

from __future__ import annotations

from collections.abc import Iterator
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


class KindNames:
    """The registered kinds' names as attributes, derived from the registry: a kind's name in capitals gives
    its name once that kind is registered (an AttributeError names the registered ones otherwise). For tests
    and scripts that pick a kind by name; a kind's own code uses its own name, the engine `kind_for`."""

    def __getattr__(self, member: str) -> str:
        name = member.lower()
        if member != name.upper() or name not in KINDS:
            raise AttributeError(
                f"{member}: no registered study kind by that name (registered: {', '.join(KINDS)})"
            )
        return name

    def __iter__(self) -> Iterator[str]:
        return iter(KINDS)


StudyKind = KindNames()
