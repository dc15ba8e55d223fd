"""What every view of the REST API shares (h2e_site/api.py has the parsing, which DRF's settings load):

- ComputedView: an endpoint whose answer is computed (a leaderboard, a report card), not a list of rows.
- api_not_found: the answer to an /api/ path that no route takes, a JSON 404 as every API error is.
- ApiSchema: the published schema (/api/schema/) with the error answers every operation can give documented
  (400, 401, 403, 404), so that a client can rely on it; Schemathesis checks the app against it in the suite
  (tests/api/test_schemathesis.py). The path parameters' patterns and bounds are
  SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"].
"""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

# The schema class comes first: extend_schema below loads it (it is DRF's DEFAULT_SCHEMA_CLASS).
ERROR_DESCRIPTIONS = {
    "400": "The body or a query parameter is refused: the answer names each one with the reason.",
    "401": "No credentials (a staff session or `Authorization: Token <key>`).",
    "403": "Not staff, or (writes that start work) without the jobs.add_job permission.",
    "404": "No such row (or no such page of a list).",
}


class ApiSchema(AutoSchema):
    """drf-spectacular's AutoSchema, with every operation's error answers documented: 400 where it takes a
    body or query parameters, 404 where its path names a row or it lists (a page beyond the last), 401 and
    403 everywhere. (The path parameters' patterns and bounds: PATH_CONVERTER_OVERRIDES in settings.)"""

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        codes = ["401", "403"]
        if self._has_input():
            codes.append("400")
        if self._get_parameters() or self._is_list_view():  # a row, a page or a name that is not there
            codes.append("404")
        for code in codes:
            if code not in responses:
                responses[code] = {
                    "content": {"application/json": {"schema": build_basic_type(OpenApiTypes.OBJECT)}},
                    "description": ERROR_DESCRIPTIONS[code],
                }
        return responses

    def _has_input(self) -> bool:
        return self.method in {"POST", "PUT", "PATCH"} or bool(self._get_parameters())

    def _get_parameters(self) -> list[dict[str, Any]]:
        """The query parameters as the API parses them (h2e_site.api): never empty (a string has at least a
        character, a list an item), lists given comma-separated, pages from 1."""
        parameters = super()._get_parameters()
        for parameter in parameters:
            if parameter["in"] != "query":
                continue
            schema = parameter.setdefault("schema", {})
            if schema.get("type") == "string" and "enum" not in schema:
                schema.setdefault("minLength", 1)
            elif schema.get("type") == "array":
                parameter.update(style="form", explode=False)
                schema.setdefault("minItems", 1)
                items = schema.setdefault("items", {"type": "string"})
                if items.get("type") == "string":
                    items.setdefault("minLength", 1)
                    items.setdefault("pattern", "^[^,]+$")
            elif parameter["name"] == "page" and schema.get("type") == "integer":
                schema.setdefault("minimum", 1)
        return parameters


class ComputedView(generics.GenericAPIView):
    """An endpoint whose answer is computed, not a list of rows: no queryset and no filter backends (the
    browsable API's filter form asks for a queryset: it gets none); `serializer_class` documents the answer's
    shape, and a POST's body."""

    filter_backends: list[Any] = []
    pagination_class: Any = None

    def get_queryset(self) -> Any:
        return []


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
def api_not_found(request: Request, *args: Any, **kwargs: Any) -> Response:
    """An /api/ path no route takes (a path parameter that is not a number or a slug): a JSON 404 (staff; 401
    or 403 for others, as everywhere in the API), not Django's HTML page."""
    raise NotFound(f"no API endpoint at {request.path}")
