"""Request checks every page and API endpoint shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from rest_framework.views import APIView

from h2e_site.api import NUL_REFUSAL

from .jobs.services import jobs_not_queued

API_PREFIX = "/api/"


class NulMiddleware:
    """PostgreSQL cannot store or compare text holding NUL, so no NUL may reach a query: a path or a query
    parameter (its name or a value) holding one gets a 400 naming it, never a silent removal. (Form fields
    refuse NUL themselves: Django's and DRF's CharFields; the annotator's forms clean it away with
    h2e_site.inputs.clean_text.)

    Under /api/ the refusal is JSON, as every API error is, and comes after the credentials are checked (a
    request without them gets 401/403 first): the request goes on to its view marked (META[NUL_REFUSAL]),
    and the API's content negotiation (h2e_site.api.CredentialsFirstNegotiation), which every API view runs
    before anything else, answers it once the view's permissions hold. Under /api/, a view that is not DRF's
    is answered here, before it runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = nul_refusal(request)
        if refusal is None:
            return self.get_response(request)
        if not request.path_info.startswith(API_PREFIX):
            return HttpResponseBadRequest(refusal, content_type="text/plain")
        request.META[NUL_REFUSAL] = refusal
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        refusal = request.META.get(NUL_REFUSAL)
        cls = getattr(view, "cls", None)
        if refusal is None or (isinstance(cls, type) and issubclass(cls, APIView)):
            return None
        return JsonResponse({"detail": refusal}, status=400)


def nul_refusal(request: HttpRequest) -> str | None:
    """Why the request is refused for a NUL in its path or query string (None when it holds none)."""
    if "\x00" in request.path:
        return "The path contains a NUL character."
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            name = key.replace("\x00", "\\x00")[:40]
            return f"{name}: the query parameter contains a NUL character."
    if "\x00" in request.META.get("QUERY_STRING", ""):
        return "The query string contains a NUL character."
    return None


class JobsNotQueuedMiddleware:
    """A staff page (the admin's included) whose request started a job that could not be queued, the broker
    being unreachable (h2e_site.jobs.services.job_enqueue marks it failed), shows an error message naming the
    job and how to run it, on the page it renders or redirects to, instead of a 500. The API's job-starting
    endpoints say it in their own answer (a 503). Inside MessageMiddleware, which stores the message."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with jobs_not_queued() as not_queued:
            response = self.get_response(request)
        if not_queued and _staff_page(request):
            for job in not_queued:
                messages.error(request, job.error)
        return response


def _staff_page(request: HttpRequest) -> bool:
    """A staff user's page: not the API, and not a participant's (whose answer stored failures whose embed
    job was not queued: the warning is for staff, in the log and on the Jobs page)."""
    match = getattr(request, "resolver_match", None)
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_staff) and not (match is not None and "api" in match.namespaces)
