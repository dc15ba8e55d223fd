"""A judge's report card (staff): /judges/<judge_id>/ (annotation/kinds/critical_failures/report_card.py has
the definitions)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.kinds.critical_failures.report_card import report_card
from h2e_site.web import staff_required
from judging.models import Judge


@staff_required
@require_GET
def report_card_page(request: HttpRequest, judge_id: str) -> HttpResponse:
    judge = get_object_or_404(Judge, judge_id=judge_id)
    return render(request, "annotation/report_card.html", {"card": report_card(judge)})
