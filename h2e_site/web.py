"""Helpers every app's pages, admin and API use: permissions, htmx, filters given as id lists, display bits.

- staff_required: the researcher pages (anonymous -> login page, signed-in non-staff -> 403).
- RUN_PERMISSION / can_run_jobs / CanRunJobs: starting, cancelling and retrying any job needs jobs.add_job.
- HtmxHttpRequest / wants_fragment: one view, two renderings (the page, or its fragment for an htmx swap).
- query_ids: a filter given repeated (?judge=a&judge=b) or as a comma list (?judge=a,b), pages and API alike.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import wraps
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, QueryDict
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django_htmx.middleware import HtmxDetails
from rest_framework import permissions

View = Callable[..., HttpResponseBase]  # a page, a redirect or a streamed download
RUN_PERMISSION = "jobs.add_job"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def staff_required(view: View) -> View:
    """Anonymous users go to the login page; signed-in non-staff users get 403."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return wrapped


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An htmx swap asks for the fragment; a history restore needs the whole page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def query_ids(request: HttpRequest, name: str) -> list[str]:
    """Values of a filter given repeated (?judge=a&judge=b) or as a comma list (?judge=a,b)."""
    return [v.strip() for raw in request.GET.getlist(name) for v in raw.split(",") if v.strip()]


def query_string(params: dict[str, str]) -> str:
    """A query string of the non-empty params ("" when there are none)."""
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in params.items() if v})
    return query.urlencode()


def can_run_jobs(request: HttpRequest) -> bool:
    return request.user.has_perm(RUN_PERMISSION)


def request_user(request: HttpRequest) -> User | None:
    """The signed-in user, or None (anonymous)."""
    user: User | AnonymousUser = request.user  # type: ignore[assignment]
    return user if isinstance(user, User) else None


class CanRunJobs(permissions.BasePermission):
    """API writes that start, cancel or retry a job need jobs.add_job; reads only the staff check."""

    message = "Starting or cancelling jobs needs the 'add job' permission."

    def has_permission(self, request: Any, view: Any) -> bool:
        return request.method in permissions.SAFE_METHODS or request.user.has_perm(RUN_PERMISSION)


def format_duration(seconds: float | None) -> str:
    """12 s, 3 min 05 s, 2 h 07 min; "" for None."""
    if seconds is None:
        return ""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


# --- CSV exports -----------------------------------------------------------------------------------------

# OWASP "CSV injection": a cell starting with one of these is run as a formula by spreadsheet programs.
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_DECIMALS = 4  # every float a CSV export writes is rounded to this many decimal places


def csv_value(value: Any) -> Any:
    """A cell as every CSV export of the app writes it: text that a spreadsheet would run as a formula (it
    starts with = + - @ tab or CR, also after leading spaces) gets a leading single quote, as OWASP
    recommends; a carriage return inside text becomes a line feed (which the csv module always quotes);
    floats are rounded to CSV_DECIMALS places (no 42.00000000000001); numbers the app computed and other
    values are written as they are. (The h2e files export_h2e writes follow the reference's format
    to the byte instead.)"""
    if isinstance(value, float):
        return round(value, CSV_DECIMALS)
    if isinstance(value, str):
        safe = "'" + value if value.lstrip(" ").startswith(CSV_FORMULA_STARTS) else value
        return safe.replace("\r\n", "\n").replace("\r", "\n")  # a line break inside a cell is always quoted
    return value


class SafeDictWriter(csv.DictWriter):
    """csv.DictWriter whose every cell goes through csv_value."""

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({key: csv_value(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for rowdict in rowdicts:
            self.writerow(rowdict)


class _Echo:
    """A file-like object whose write returns what it is given (the csv writer then returns each line)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterable[Mapping[str, Any]], fields: list[str]) -> Iterator[str]:
    """The header, then one CSV line per row (its `fields`, each cell through csv_value), for streaming."""
    writer = SafeDictWriter(_Echo(), fieldnames=fields)
    yield writer.writeheader()
    for row in rows:
        yield writer.writerow(row)


# --- admin --------------------------------------------------------------------------------------------


class RunActionsMixin:
    """Admin actions that start or stop jobs: the "run" permission (jobs.add_job) and the intermediate page
    every such action shows first (what will happen, then a confirmation), as Django's delete action does."""

    admin_site: admin.AdminSite
    model: type[models.Model]

    def has_run_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(RUN_PERMISSION)

    def action_page(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        *,
        action: str,
        title: str,
        submit_label: str,
        form: forms.Form | None = None,
        intro: str = "",
        warning: str = "",
        summary: list[str] | None = None,
    ) -> TemplateResponse:
        """The intermediate page of an action: the selection, a form or a confirmation, posted back."""
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "queryset": queryset,
            "objects_label": f"Selected {self.model._meta.verbose_name_plural}",
            "form": form,
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "submit_label": submit_label,
            "intro": intro,
            "warning": warning,
            "summary": summary or [],
        }
        return TemplateResponse(request, "admin/run_action.html", context)


def confirmed(request: HttpRequest) -> bool:
    """Whether an admin action's intermediate page was submitted (the "apply" button)."""
    return "apply" in request.POST


def admin_link(obj: Any, text: object | None = None) -> SafeString:
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, obj if text is None else text)


def pre_block(text: object) -> SafeString:
    """A raw text shown as-is (escaped) in a scrollable <pre> block."""
    return format_html('<pre style="white-space: pre-wrap; max-height: 30rem; overflow: auto">{}</pre>', text)


def numbered_block(steps: object) -> SafeString:
    lines = steps if isinstance(steps, list) else [steps]
    return pre_block("\n".join(f"{i}. {step}" for i, step in enumerate(lines, start=1)))
