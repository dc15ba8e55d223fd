"""GET /api/training/runs/ and GET /api/training/runs/<name>/ (staff): the training runs, and a run's figures
per step or bucket of steps with their 95 % intervals and the length-gaming alarm (judging/training/watch.py
computes them; docs/reference/statistics.md, "Training runs: the figures and the length-gaming alarm", defines
each)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api_views import ComputedView

from .models import TrainingRun
from .selectors import RunLine, run_lines, runs_with_counts


def interval_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True, help_text=help_text
    )


class AlarmSerializer(serializers.Serializer):
    flagged = serializers.BooleanField(help_text="the length-gaming alarm is raised")
    from_step = serializers.IntegerField(
        allow_null=True, help_text="the first step of the bucket it was raised at"
    )
    bucket = serializers.CharField(help_text='that bucket\'s label ("12", or "100-109"); "" when not flagged')
    ratio_mean = serializers.FloatField(allow_null=True)
    ratio_interval = interval_field("that bucket's 95 % t interval of the mean length ratio")
    band = interval_field("[1 - tau, 1 + tau]")
    how2score_first = serializers.FloatField(
        allow_null=True, help_text="How2Score of the first scored bucket"
    )
    first_step = serializers.IntegerField(allow_null=True)
    how2score = serializers.FloatField(allow_null=True, help_text="How2Score of the flagged bucket")
    slope_per_step = serializers.FloatField(
        allow_null=True, help_text="How2Score's least-squares slope per step over the buckets so far"
    )
    why = serializers.CharField()


class BucketSerializer(serializers.Serializer):
    first_step = serializers.IntegerField()
    last_step = serializers.IntegerField()
    label = serializers.CharField()
    n_steps = serializers.IntegerField(help_text="steps of the bucket that have calls")
    n_calls = serializers.IntegerField()
    n_scored = serializers.IntegerField(help_text="calls with a How2Score (0 or 1)")
    how2score = serializers.FloatField(allow_null=True)
    how2score_interval = interval_field("95 % Wilson interval")
    n_format = serializers.IntegerField()
    format_rate = serializers.FloatField(allow_null=True, help_text="share of calls whose step format is 1")
    format_interval = interval_field("95 % Wilson interval")
    n_scored_format_ok = serializers.IntegerField()
    how2score_format_ok = serializers.FloatField(
        allow_null=True, help_text="How2Score among the calls whose step format passed (paper §7.1)"
    )
    how2score_format_ok_interval = interval_field("95 % Wilson interval")
    length_mean = serializers.FloatField(allow_null=True, help_text="mean length reward")
    total_mean = serializers.FloatField(allow_null=True, help_text="mean weighted total")
    n_ratio = serializers.IntegerField()
    ratio_mean = serializers.FloatField(allow_null=True, help_text="mean gen/ref length ratio")
    ratio_interval = interval_field("95 % Student t interval (null for fewer than 2 calls)")
    store_share = serializers.FloatField(allow_null=True, help_text="share of calls answered from the store")
    n_errors = serializers.IntegerField(help_text="calls whose How2Score is missing for a judge error")


class RunSerializer(serializers.Serializer):
    name = serializers.CharField()
    policy = serializers.CharField()
    reward_name = serializers.CharField()
    judge = serializers.CharField(allow_null=True, help_text="the judge's id")
    created_at = serializers.DateTimeField()
    n_calls = serializers.IntegerField()
    n_steps = serializers.IntegerField(help_text="distinct steps with calls")
    last_call_at = serializers.DateTimeField(allow_null=True)
    alarm = AlarmSerializer()


class RunDetailSerializer(RunSerializer):
    reward_config = serializers.JSONField(help_text="the reward config as the run first used it")
    tau = serializers.FloatField()
    bucket_size = serializers.IntegerField(help_text="steps per bucket (1: a row per step)")
    n_calls_without_step = serializers.IntegerField(help_text="calls without a step, left out of the buckets")
    buckets = BucketSerializer(many=True)


def _run_json(line: RunLine) -> dict[str, Any]:
    run = line.run
    return {
        "name": run.name,
        "policy": run.policy,
        "reward_name": run.reward_name,
        "judge": run.judge.judge_id if run.judge else None,
        "created_at": run.created_at,
        "n_calls": line.n_calls,
        "n_steps": line.n_steps,
        "last_call_at": line.last_call_at,
        "alarm": line.watch.alarm.as_json(),
    }


class TrainingRunListView(generics.ListAPIView):
    """The training runs, newest first, each with its counts and its length-gaming alarm."""

    serializer_class = RunSerializer
    filter_backends: list[Any] = []

    def get_queryset(self) -> Any:
        return runs_with_counts()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        rows = [_run_json(line) for line in run_lines(page or [])]
        return self.get_paginated_response(RunSerializer(rows, many=True).data)


class TrainingRunDetailView(ComputedView):
    """A run's figures per step (or bucket of steps) with their 95 % intervals, and the length-gaming alarm:
    flagged from the first bucket whose length-ratio interval lies wholly outside [1 - tau, 1 + tau] while
    How2Score's least-squares slope over the buckets so far is above 0."""

    serializer_class = RunDetailSerializer

    @extend_schema(responses=RunDetailSerializer)
    def get(self, request: Request, name: str) -> Response:
        run: TrainingRun = get_object_or_404(runs_with_counts(), name=name)
        line = run_lines([run])[0]
        watch = line.watch
        body = _run_json(line) | {
            "reward_config": run.reward_config,
            "tau": watch.tau,
            "bucket_size": watch.bucket_size,
            "n_calls_without_step": run.calls.filter(step__isnull=True).count(),
            "buckets": [bucket.as_json() for bucket in watch.buckets],
        }
        return Response(RunDetailSerializer(body).data)
