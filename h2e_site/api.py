"""What every endpoint of the REST API shares, so that one place knows each rule:

- BoundedJSONParser: a JSON body is measured before it is parsed (h2e_site.bounds: too deep or too long is
  a 400); ObjectJSONParser: it must be an object ([1, 2] or "build_tasks" get a 400 naming the body).
- query_params: the query parameters of a view, declared once as a serializer, parsed strictly (a value that
  is not of the declared type or choice gets a 400 naming the parameter), and documented from the same
  serializer (`extend_schema(parameters=[TheQuerySerializer])`).
- StrictBooleanFilter / IdFilter / IdInFilter: django-filter's filters, just as strict (no silent ignoring of
  `?has_failure=0.17`), with ids typed as integers in the schema.
- CredentialsFirstNegotiation: a request without credentials gets 401/403 before anything else about it is
  looked at (its format, a NUL in its query).
- ShareSerializer: k of n with its rate and Wilson interval, as every app's figures report a share.
(The published schema's shared parts are in h2e_site.api_views.py: this module is loaded with DRF's
settings, which that one's imports would load again.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import django_filters
from django import forms
from django.http import QueryDict
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field
from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from h2e_site.bounds import MAX_JSON_CHARS, JSONRefused, json_loads_bounded

# The largest value a PostgreSQL bigint (a primary key) holds.
MAX_ID = 2**63 - 1
# request.META key: why h2e_site.middleware.NulMiddleware refuses an /api/ request (a NUL in its query or
# path), answered by CredentialsFirstNegotiation once the request's credentials are checked.
NUL_REFUSAL = "h2e.nul_refusal"


class CredentialsFirstNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation (settings: DEFAULT_CONTENT_NEGOTIATION_CLASS), which DRF runs first of all in
    every API view, before authentication: here the view's own permission check (authentication included)
    comes first, so that a request without credentials gets 401 (403 when they are not enough) before its
    format (a `.5` suffix, `?format=5`: 404) or a NUL in its query (400, JSON) is looked at. The check runs
    again where DRF runs it; it reads nothing but the user."""

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        view = (request.parser_context or {}).get("view")
        if view is not None:
            view.check_permissions(request)
        refusal = request.META.get(NUL_REFUSAL)
        if refusal is not None:
            raise ParseError(refusal)
        return super().select_renderer(request, renderers, format_suffix)


class BoundedJSONParser(parsers.JSONParser):
    """DRF's JSON parser, measuring the body before parsing it: a 400 naming the body, never a 500. A view
    whose bodies are larger by nature (a reward batch) names its own bound in a subclass (max_chars)."""

    max_chars = MAX_JSON_CHARS

    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return json_loads_bounded(
                "body", stream.read() if stream is not None else b"", max_chars=self.max_chars
            )
        except UnicodeDecodeError as exc:
            raise ParseError(f"body: not UTF-8 ({exc.reason})") from exc
        except JSONRefused as exc:  # named as a serializer names a field
            if exc.path and isinstance(exc.path[0], str):
                raise ParseError({exc.path[0]: [str(exc).removeprefix("body.")]}) from exc
            raise ParseError(str(exc)) from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc


class ObjectJSONParser(BoundedJSONParser):
    """JSON bodies measured and parsed (BoundedJSONParser: too deep or too long is a 400), then
    refused with a 400 unless they are an object: every endpoint reads its body as named fields."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            shown = repr(data)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise ParseError(f"The body must be a JSON object ({{...}}), not {type(data).__name__} {shown}.")
        return data


# --- query parameters -------------------------------------------------------------------------------------


class CommaListField(serializers.ListField):
    """A query parameter given repeated (?judge=a&judge=b) or as a comma list (?judge=a,b)."""

    def get_value(self, dictionary: Any) -> Any:
        if self.field_name not in dictionary:
            return serializers.empty
        raw = dictionary.getlist(self.field_name) if isinstance(dictionary, QueryDict) else []
        return [piece for text in raw for piece in text.split(",")]  # an empty piece is refused (child)


def comma_list(help_text: str, **kwargs: Any) -> CommaListField:
    return CommaListField(
        child=serializers.CharField(max_length=200, trim_whitespace=False),
        required=False,
        help_text=help_text,
        **kwargs,
    )


EMPTY = "empty: give a value or leave the parameter out"
REPEATED = "given more than once: it takes one value"


def refuse_odd_values(data: Any, *, single: Any, lists: Any = ()) -> None:
    """Form-style data (a query string, a multipart body) as the API reads it: a parameter given empty is
    refused, not taken as absent (as a web form's blank field would be), and one that takes a single value
    is refused when repeated, not read as its last value. ValidationError (a 400) naming each one."""
    if not isinstance(data, QueryDict):
        return
    single = list(single)
    problems: dict[str, list[str]] = {}
    for name in [*single, *lists]:
        values = data.getlist(name)
        if "" in values:
            problems[name] = [EMPTY]
        elif name in single and len(values) > 1:
            problems[name] = [REPEATED]
    if problems:
        raise ValidationError(problems)


def single_and_list_fields(fields: dict[str, Any]) -> tuple[list[str], list[str]]:
    lists = [name for name, field in fields.items() if isinstance(field, serializers.ListField)]
    return [name for name in fields if name not in lists], lists


class StrictFormSerializer(serializers.Serializer):
    """A body that may come as a form (multipart): empty or repeated single values are refused, as in
    queries (refuse_odd_values); a JSON body is typed already."""

    def to_internal_value(self, data: Any) -> Any:
        single, lists = single_and_list_fields(dict(self.fields))
        refuse_odd_values(data, single=single, lists=lists)
        return super().to_internal_value(data)


class ShareSerializer(serializers.Serializer):
    """k of n with its rate and 95 % Wilson interval (h2e_site.stats.Share)."""

    k = serializers.IntegerField()
    n = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="k / n; null when n is 0")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


def query_params(request: Request, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The view's query parameters, parsed by its query serializer; a value that does not parse, is empty,
    or is repeated where one is taken, is a 400 naming the parameter (ValidationError). Parameters the
    serializer does not declare are left alone (`format`; pagination checks `page`)."""
    single, lists = single_and_list_fields(dict(serializer_class().fields))
    refuse_odd_values(request.query_params, single=single, lists=lists)
    parsed = serializer_class(data=request.query_params)
    if not parsed.is_valid():
        raise ValidationError(parsed.errors)
    return dict(parsed.validated_data)


def query_bool(value: Any) -> bool | None:
    """A boolean as a query parameter writes it: true, false, 1, 0, yes, no, on, off (any case); None for
    anything else (the caller refuses it, naming the parameter)."""
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    return None


class QueryBooleanField(serializers.BooleanField):
    """true/false as a query parameter: true, false, 1, 0, yes, no (any case); anything else is refused."""

    default_error_messages = {"invalid": '"{input}" is not true or false (true, false, 1, 0, yes, no).'}

    def to_internal_value(self, data: Any) -> bool:
        value = query_bool(data)
        if value is None:
            self.fail("invalid", input=str(data)[:40])
        return bool(value)


class FormBooleanField(serializers.BooleanField):
    """true or false in a multipart or form body, as the schema says a boolean is written (any case);
    DRF's BooleanField also takes 1, 0, yes, no... which a client reading the schema would not send."""

    default_error_messages = {"invalid": '"{input}" is not true or false.'}

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        text = str(data).strip().lower()
        if text in {"true", "false"}:
            return text == "true"
        self.fail("invalid", input=str(data)[:40])
        raise AssertionError  # fail() raises


# --- django-filter -----------------------------------------------------------------------------------------


class _StrictBooleanField(forms.Field):
    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        parsed = query_bool(value)
        if parsed is not None:
            return parsed
        raise forms.ValidationError(f"{str(value)[:40]!r} is not true or false (true, false, 1, 0, yes, no).")


class StrictBooleanFilter(django_filters.BooleanFilter):
    """django-filter's BooleanFilter ignores a value it cannot read (?has_failure=0.17 filters nothing):
    this one refuses it with a 400 naming the parameter."""

    field_class = _StrictBooleanField


class _IdField(forms.IntegerField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """A row's id: a whole number from 1 (not a decimal, not beyond a bigint)."""

    field_class = _IdField


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter as DRF's filter backend (settings: DEFAULT_FILTER_BACKENDS), except that a filter given
    empty (?split=, ?generator=a,,b) is refused with a 400 naming it: django-filter would ignore it, as a
    web form's blank field."""

    def get_filterset(self, request: Any, queryset: Any, view: Any) -> Any:
        filterset = super().get_filterset(request, queryset, view)
        if filterset is not None:
            refuse_odd_values(request.query_params, single=list(filterset.filters))
            empty_pieces = {
                name: [EMPTY]
                for name, declared in filterset.filters.items()
                if isinstance(declared, django_filters.filters.BaseCSVFilter)
                for value in request.query_params.getlist(name)
                if "" in value.split(",")
            }
            if empty_pieces:
                raise ValidationError(empty_pieces)
        return filterset


class StrictPageNumberPagination(PageNumberPagination):
    """DRF's page numbers (settings: DEFAULT_PAGINATION_CLASS), with `page` given once and not empty."""

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        refuse_odd_values(request.query_params, single=[self.page_query_param])
        return super().paginate_queryset(queryset, request, view)
