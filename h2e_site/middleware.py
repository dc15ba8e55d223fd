"""Request checks every page and API endpoint shares."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict


class NulMiddleware:
    """PostgreSQL cannot store or compare text holding NUL, so no NUL may reach a query: NULs are removed
    from query parameters (a search for "\\x00compost" is a search for "compost"), and a path holding one
    gets a 400. (Form fields refuse NUL themselves: Django's and DRF's CharFields; the annotator's forms
    clean it away with h2e_site.inputs.clean_text.)"""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return HttpResponseBadRequest("The path contains a NUL character.", content_type="text/plain")
        if "\x00" in request.META.get("QUERY_STRING", "") or any(
            "\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()
        ):
            request.GET = _without_nul(request.GET)  # type: ignore[assignment]
        return self.get_response(request)


def _without_nul(query: QueryDict) -> QueryDict:
    cleaned = QueryDict(mutable=True)
    for key, values in query.lists():
        cleaned.setlist(key.replace("\x00", ""), [value.replace("\x00", "") for value in values])
    cleaned._mutable = False
    return cleaned
