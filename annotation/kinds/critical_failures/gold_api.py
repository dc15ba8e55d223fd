"""A critical-failures study's adjudicated gold in the API (staff), as the gold exports give it
(gold_export.py), mounted through the kind's `api_urls` (annotation/kinds/critical_failures/urls.py):

GET /api/studies/<slug>/gold/?at=<ISO 8601>          the gold per item, now or as of `at`
GET /api/studies/<slug>/gold/events/?at=<ISO 8601>   every decision up to `at` (the audit log), oldest first
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.models import Study
from annotation.kinds.critical_failures.gold_export import event_rows, gold_rows
from h2e_site.api import query_params
from h2e_site.api_views import ComputedView

KIND = "critical_failures"


class GoldFailureSerializer(serializers.Serializer):
    description = serializers.CharField()
    l1_steps = serializers.ListField(child=serializers.IntegerField(), help_text="1-based L1 step numbers")
    l2_steps = serializers.ListField(child=serializers.IntegerField(), help_text="1-based L2 step numbers")


class GoldRowSerializer(serializers.Serializer):
    item_id = serializers.IntegerField()
    item_position = serializers.IntegerField()
    subject_key = serializers.CharField()
    generation_id = serializers.IntegerField(allow_null=True)
    goal = serializers.CharField()
    generator = serializers.CharField(help_text="generator_id")
    has_failure = serializers.BooleanField()
    failures = GoldFailureSerializer(many=True)
    n_failures = serializers.IntegerField()
    reason = serializers.CharField(help_text="the reason of the decision that set this gold")
    decided_by = serializers.CharField(help_text="username; empty when the user was deleted")
    decided_at = serializers.CharField(help_text="ISO 8601")
    n_decisions = serializers.IntegerField(help_text="decisions on the item up to `at`")


class GoldSerializer(serializers.Serializer):
    study = serializers.CharField()
    at = serializers.DateTimeField(allow_null=True, help_text="the time the gold is as of; null: now")
    gold = GoldRowSerializer(many=True)


class GoldEventSerializer(serializers.Serializer):
    event_id = serializers.IntegerField()
    item_id = serializers.IntegerField()
    decided_by = serializers.CharField()
    decided_at = serializers.CharField(help_text="ISO 8601")
    verdict = serializers.JSONField(allow_null=True, help_text="the gold set (null: cleared)")
    before = serializers.JSONField(allow_null=True, help_text="the gold it replaced (null: none)")
    reason = serializers.CharField()


class GoldEventsSerializer(serializers.Serializer):
    study = serializers.CharField()
    at = serializers.DateTimeField(allow_null=True)
    events = GoldEventSerializer(many=True)


class AsOfSerializer(serializers.Serializer):
    at = serializers.DateTimeField(required=False, help_text="ISO 8601; leave out for now")


def _study_and_time(request: Request, slug: str) -> tuple[Study, Any]:
    study = get_object_or_404(Study, slug=slug, kind=KIND)
    return study, query_params(request, AsOfSerializer).get("at")


class GoldView(ComputedView):
    """The study's adjudicated gold, one row per item with gold (now, or as of `at`)."""

    serializer_class = GoldSerializer

    @extend_schema(parameters=[AsOfSerializer])
    def get(self, request: Request, slug: str) -> Response:
        study, at = _study_and_time(request, slug)
        data = {"study": study.slug, "at": at, "gold": list(gold_rows(study, at))}
        return Response(self.get_serializer(data).data)


class GoldEventsView(ComputedView):
    """Every adjudication decision on the study's items up to `at` (now when left out), oldest first."""

    serializer_class = GoldEventsSerializer

    @extend_schema(parameters=[AsOfSerializer])
    def get(self, request: Request, slug: str) -> Response:
        study, at = _study_and_time(request, slug)
        data = {"study": study.slug, "at": at, "events": list(event_rows(study, at))}
        return Response(self.get_serializer(data).data)


__all__ = ["GoldEventsView", "GoldView"]
