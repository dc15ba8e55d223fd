"""Request checks every page and API endpoint shares."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from .jobs.services import jobs_not_queued


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
