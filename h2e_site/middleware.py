"""Request checks every page and API endpoint shares."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


class NulMiddleware:
    """PostgreSQL cannot store or compare text holding NUL, so no NUL may reach a query: a path or a query
    parameter (its name or a value) holding one gets a 400 naming it, never a silent removal. (Form fields
    refuse NUL themselves: Django's and DRF's CharFields; the annotator's forms clean it away with
    h2e_site.inputs.clean_text.)"""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return _refused("The path contains a NUL character.")
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                name = key.replace("\x00", "\\x00")[:40]
                return _refused(f"{name}: the query parameter contains a NUL character.")
        if "\x00" in request.META.get("QUERY_STRING", ""):
            return _refused("The query string contains a NUL character.")
        return self.get_response(request)


def _refused(message: str) -> HttpResponse:
    return HttpResponseBadRequest(message, content_type="text/plain")
