"""The failure browser's API (DRF, staff): the list of judge and human critical failures.

GET /api/failures/?topic=&generator=&judge=&study=&source=&q=&pattern=&cursor=&counts=

Mounted in the "api" namespace through annotation/failures/urls.py (`api_routes`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.failures import reads as failures
from h2e_site.api import QueryBooleanField, query_params
from h2e_site.api_views import ComputedView


class FailureSerializer(serializers.Serializer):
    """A critical failure from a judge (judgment set) or a human annotator (annotation and study set)."""

    id = serializers.CharField(help_text="judge-<id> or human-<id>")
    source = serializers.ChoiceField(choices=["judge", "human"])
    generation = serializers.IntegerField()
    judgment = serializers.IntegerField(allow_null=True)
    annotation = serializers.IntegerField(allow_null=True)
    order = serializers.IntegerField()
    description = serializers.CharField()
    L1_steps = serializers.JSONField()
    L2_steps = serializers.JSONField()
    topic = serializers.CharField(allow_null=True)
    generator_id = serializers.CharField()
    generator_model = serializers.CharField()
    source_example_id = serializers.CharField()
    goal = serializers.CharField()
    judge_id = serializers.CharField(allow_null=True)
    judge_model = serializers.CharField(allow_null=True)
    study = serializers.CharField(allow_null=True)


class FailureTopicCountSerializer(serializers.Serializer):
    topic = serializers.CharField()
    judge = serializers.IntegerField()
    human = serializers.IntegerField()
    total = serializers.IntegerField()
    at_least = serializers.BooleanField(
        help_text="a text search matching more than 5,000 judges' failures: the judge count is a lower bound"
    )


class FailurePageSerializer(serializers.Serializer):
    results = FailureSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="pass as ?cursor= for the next page")
    next = serializers.CharField(allow_null=True, help_text="the next page's URL")
    counts_by_topic = FailureTopicCountSerializer(many=True, required=False, help_text="with ?counts=true")


def _name(help_text: str) -> serializers.CharField:
    return serializers.CharField(required=False, max_length=200, help_text=help_text)


class FailureQuerySerializer(serializers.Serializer):
    topic = _name("topic name")
    generator = _name("generator_id")
    judge = _name("judge_id (judges' failures only)")
    study = _name("study slug (human failures only)")
    source = serializers.ChoiceField(choices=["judge", "human"], required=False, help_text="absent: both")
    q = _name("text search (PostgreSQL: full text, websearch syntax; else substring)")
    pattern = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="a failure pattern's id: its failures"
    )
    cursor = serializers.RegexField(
        r"\A\d{1,18}\.[jh]\.\d{1,18}\.\d{1,9}\Z", required=False, help_text="next_cursor of the previous page"
    )
    counts = QueryBooleanField(required=False, default=False, help_text="also return counts_by_topic")


class FailureListView(ComputedView):
    """Critical failures from judges and human annotators, newest generation first, then judge before
    human, then judgment/annotation, then order; keyset-paginated (50 a page) by an opaque cursor."""

    serializer_class = FailurePageSerializer

    @extend_schema(parameters=[FailureQuerySerializer], responses=FailurePageSerializer)
    def get(self, request: Request) -> Response:
        params = query_params(request, FailureQuerySerializer)
        query = failures.FailureQuery.from_params(params)
        token = params.get("cursor", "")
        try:
            cursor = failures.Cursor.decode(token) if token else None
        except ValueError as exc:
            return Response({"cursor": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        choices = failures.filter_choices_for(query)
        problems = query.problems(choices)
        if problems:  # a filter naming no topic, generator, judge or study: nothing to list
            return Response({k: [v] for k, v in problems.items()}, status=status.HTTP_404_NOT_FOUND)
        filters = failures.failure_filters_resolve(query, choices)
        page = failures.failure_page(filters=filters, cursor=cursor)
        data: dict[str, Any] = {
            "results": [row.as_json() for row in page.rows],
            "next_cursor": page.next_cursor,
            "next": _next_url(request, page.next_cursor),
        }
        if params["counts"]:
            data["counts_by_topic"] = [
                {
                    "topic": c.topic,
                    "judge": c.judge,
                    "human": c.human,
                    "total": c.total,
                    "at_least": c.at_least,
                }
                for c in failures.failure_counts_by_topic(filters=filters)
            ]
        return Response(data)


def _next_url(request: Request, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    params = request.query_params.copy()
    params["cursor"] = cursor
    return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
