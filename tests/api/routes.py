"""The URL conf walked: every route with its full path template, its name (with namespaces) and its view, so
that a test covers an endpoint added tomorrow without being told about it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RoutePattern

_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>\w+)>")
SAFE = {"GET", "HEAD", "OPTIONS"}


@dataclass(frozen=True)
class Route:
    template: str  # "api/mining/runs/<int:pk>/start/", or a router's regex
    name: str  # "mining-api:run-start" ("" for an unnamed route)
    view: Any
    parameters: dict[str, str]  # name -> converter ("int", "slug", "str"; "regex" for a regex group)

    @property
    def is_api(self) -> bool:
        return self.template.startswith("api/")

    @property
    def drf_methods(self) -> set[str]:
        """The HTTP methods a DRF view answers (empty for a Django view)."""
        cls = getattr(self.view, "cls", None)
        if cls is None:
            return set()
        actions = getattr(self.view, "actions", None)
        if actions:
            return {method.upper() for method in actions} | {"OPTIONS"}
        return {m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(cls, m)} | {"OPTIONS"}

    @property
    def writes(self) -> set[str]:
        return self.drf_methods - SAFE

    @property
    def is_format_suffix(self) -> bool:
        """A router's copy of a route with a .json / .api suffix."""
        return "format" in self.parameters

    def url(self, values: Mapping[str, object] | None = None) -> str:
        """The route reversed, each parameter from `values` (by name), else a value its converter takes."""
        values = values or {}
        kwargs = {
            name: values.get(name, "no-such-thing" if converter in {"slug", "str"} else 987654)
            for name, converter in self.parameters.items()
        }
        return reverse(self.name, kwargs=kwargs)


def routes(patterns: list[Any] | None = None, prefix: str = "", namespace: str = "") -> Iterator[Route]:
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from routes(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern) and entry.name:
            pattern = entry.pattern
            if isinstance(pattern, RoutePattern):
                parameters = {m["name"]: m["converter"] or "str" for m in _PARAMETER.finditer(str(pattern))}
            else:
                parameters = dict.fromkeys(pattern.regex.groupindex, "regex")
            yield Route(prefix + str(pattern), f"{namespace}{entry.name}", entry.callback, parameters)
