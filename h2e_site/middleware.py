"""Request checks every page and API endpoint shares."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


class RefuseNulMiddleware:
    """A NUL character in the path or a query parameter gets a 400 naming where it is: PostgreSQL cannot store
    or compare text holding NUL, so such a value could only ever reach the database as a server error. (Form
    fields refuse NUL themselves: Django's and DRF's CharFields, and the annotator's forms clean it away.)"""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = _nul_in(request)
        if where:
            return HttpResponseBadRequest(f"{where} contains a NUL character.", content_type="text/plain")
        return self.get_response(request)


def _nul_in(request: HttpRequest) -> str:
    if "\x00" in request.path:
        return "The path"
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return f"The query parameter {key.replace(chr(0), '')!r}"
    return ""
