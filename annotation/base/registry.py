"""The registered study kinds, as the engine reads them: each kind's folder (annotation/kinds/<kind>/)
registers itself here when the registry (annotation/kinds/__init__.py) loads it at app start, giving its label
and the dotted path of its spec, so the engine, which sits below the kinds, asks `kind_for(study)` without
importing any kind. A kind's spec (its hooks, and the modules they compute with) is imported the first time
the kind is asked for, not by django.setup()."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.utils.module_loading import import_string

from annotation.base.models import Study
from annotation.base.spec import StudyKindSpec
from annotation.base.types import KINDS_INDEX, KindEntry


class KindRegistry(Mapping[str, StudyKindSpec]):
    """name -> the kind's spec, in the order the kinds registered; each spec imported on first use."""

    def __init__(self) -> None:
        self._specs: dict[str, StudyKindSpec] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> StudyKindSpec:
        spec = self._specs.get(name)
        if spec is None:
            entry = KINDS_INDEX[name]  # a KeyError names an unregistered kind
            with self._lock:
                spec = self._specs.get(name) or self._load(name, entry)
        return spec

    def _load(self, name: str, entry: KindEntry) -> StudyKindSpec:
        spec_class = import_string(entry.spec)
        is_spec = isinstance(spec_class, type) and issubclass(spec_class, StudyKindSpec)
        if not is_spec or spec_class.kind != name:
            raise ImproperlyConfigured(f"{entry.spec} is not the StudyKindSpec of the kind {name!r}")
        spec = self._specs[name] = spec_class()
        return spec

    def __contains__(self, name: object) -> bool:
        return name in KINDS_INDEX  # asking whether a kind is registered imports no spec

    def __iter__(self) -> Iterator[str]:
        return iter(KINDS_INDEX)

    def __len__(self) -> int:
        return len(KINDS_INDEX)


KINDS = KindRegistry()


def register(name: str, *, label: str, description: str, spec: str, agreement_api: str = "") -> None:
    """Registers a kind: its name (Study.kind), label (every page's), Study.kind's choice text, the dotted
    path of its StudyKindSpec subclass and the URL name of its agreement endpoint ("" for none)."""
    if name in KINDS_INDEX:
        raise ValueError(f"two study kinds are named {name!r}")
    KINDS_INDEX[name] = KindEntry(label, description, spec, agreement_api)


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
