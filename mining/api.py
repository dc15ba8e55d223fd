"""REST API (DRF) of mining runs, for staff: the runs, a run's funnel and the documents a stage rejected.

Mounted at /api/mining/ (h2e_site/urls.py). Same authentication as the rest of the API (staff session or
token); lists are paginated as {count, next, previous, results}.

    GET /api/mining/runs/                              runs, newest first
    GET /api/mining/runs/<id>/                         one run (config, status, job)
    GET /api/mining/runs/<id>/funnel/       per topic and stage: processed, passed, yield %, tokens, cost
    GET /api/mining/runs/<id>/rejections/?stage=filter[&topic=Health]
                                            what a stage rejected, with the reason
    POST /api/mining/runs/<id>/start/       start or resume the run (only what has no outcome is sent)
    POST /api/mining/runs/<id>/rerun/       {"stage": "filter", "config": {...optional new run config}}:
                                            delete that stage's outcomes and the later ones, start again
The POSTs also need the jobs.add_job permission (as starting any job does); 409 while a job of the run
is queued or running.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api import StrictFormSerializer, query_params
from h2e_site.llm.config import ConfigError
from h2e_site.web import CanRunJobs

from .models import MiningRun, Stage, StageOutcome
from .runs import RunRefused, mining_run_rerun_stage, mining_run_start
from .selectors import run_funnel, stage_rejections


class MiningRunSerializer(serializers.ModelSerializer):
    documents = serializers.IntegerField(source="documents_count", read_only=True)

    class Meta:
        model = MiningRun
        fields = ["id", "name", "status", "config", "job", "documents", "created_at", "updated_at"]


class RejectionSerializer(serializers.ModelSerializer):
    doc_id = serializers.CharField(source="document.doc_id")
    topic = serializers.CharField(source="document.topic.name", default=None)
    url = serializers.CharField(source="document.url")

    class Meta:
        model = StageOutcome
        fields = ["doc_id", "topic", "url", "stage", "reason", "error", "payload"]


class RunList(generics.ListAPIView):
    """Mining runs, newest first."""

    serializer_class = MiningRunSerializer

    def get_queryset(self) -> QuerySet[MiningRun]:
        return MiningRun.objects.annotate(documents_count=Count("documents")).order_by("-created_at", "-id")


class RunDetail(generics.RetrieveAPIView):
    serializer_class = MiningRunSerializer

    def get_queryset(self) -> QuerySet[MiningRun]:
        return MiningRun.objects.annotate(documents_count=Count("documents"))


class FunnelCellSerializer(serializers.Serializer):
    """Shape of selectors.FunnelCell.as_json(): one stage of one topic."""

    stage = serializers.ChoiceField(choices=Stage.choices)
    processed = serializers.IntegerField()
    passed = serializers.IntegerField()
    rejected = serializers.IntegerField(help_text="processed and not passed")
    not_sent = serializers.IntegerField(
        help_text="dropped without a request (the LLM filter, for an extraction with an empty goal); not "
        "counted as processed, as the reference counts them"
    )
    errors = serializers.IntegerField()
    yield_percent = serializers.FloatField(help_text="passed / the topic's input documents, in %")
    pass_rate_percent = serializers.FloatField(help_text="passed / processed by this stage, in %")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField()


class FunnelRowSerializer(serializers.Serializer):
    """Shape of selectors.FunnelRow.as_json(): a topic (or "All topics") through every stage."""

    topic = serializers.CharField()
    documents = serializers.IntegerField(help_text="the topic's input documents")
    cost = serializers.FloatField()
    stages = FunnelCellSerializer(many=True)


class FunnelSerializer(serializers.Serializer):
    """Shape of selectors.Funnel.as_json()."""

    run = serializers.IntegerField()
    stages = serializers.ListField(child=serializers.ChoiceField(choices=Stage.choices))
    topics = FunnelRowSerializer(many=True)
    total = FunnelRowSerializer()


class RunStartedSerializer(serializers.Serializer):
    """The answer of start and rerun: the run and the job that now runs it."""

    run = serializers.IntegerField()
    job = serializers.IntegerField()
    status = serializers.CharField(help_text="the job's status (queued)")


class RunStartSerializer(serializers.Serializer):
    """POST .../start/ takes no body (the run's own config is run)."""


class RunFunnel(generics.GenericAPIView):
    """The run's yield funnel: per topic and stage, processed / passed / yield % (of the topic's input
    documents) / pass rate % (of what the stage processed), tokens and cost; and the totals."""

    queryset = MiningRun.objects.all()
    serializer_class = FunnelSerializer
    filter_backends: list[Any] = []
    pagination_class = None

    @extend_schema(responses=FunnelSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MiningRun, pk=pk)
        return Response(run_funnel(run).as_json())


class RejectionsQuerySerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=Stage.choices)
    topic = serializers.CharField(required=False, max_length=200, help_text="only this topic's documents")


class RunRejections(generics.ListAPIView):
    """The documents a stage rejected in the run, with the reason (and the parsed answer)."""

    serializer_class = RejectionSerializer
    filter_backends: list[Any] = []

    @extend_schema(parameters=[RejectionsQuerySerializer])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[StageOutcome]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return StageOutcome.objects.none()
        run = get_object_or_404(MiningRun, pk=self.kwargs["pk"])
        query = query_params(self.request, RejectionsQuerySerializer)
        return stage_rejections(run, query["stage"], topic=query.get("topic") or None)


class RerunSerializer(StrictFormSerializer):
    stage = serializers.ChoiceField(choices=Stage.choices)
    config = serializers.DictField(
        required=False, help_text="a new run config, as the YAML file's mapping (e.g. another prompt_path)"
    )


class RunStart(generics.GenericAPIView):
    """Start or resume the run: a new MINE job that sends only what has no outcome yet."""

    queryset = MiningRun.objects.all()
    serializer_class = RunStartSerializer
    filter_backends: list[Any] = []
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(request=None, responses={202: RunStartedSerializer, 409: OpenApiTypes.OBJECT})
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MiningRun, pk=pk)
        try:
            job = mining_run_start(run=run, created_by=request.user)  # type: ignore[arg-type]
        except RunRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"run": run.pk, "job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)


class RunRerun(generics.GenericAPIView):
    """Re-run the run from a stage (optionally with a new run config).

    Rules the schema cannot state: a `config` is checked by the run config loader, as the YAML file would be
    (a missing prompt file, an unknown backend...: a 400 naming `config`); a run already running, or the
    synthetic demo run (written by demo_setup, never run): 409."""

    queryset = MiningRun.objects.all()
    serializer_class = RerunSerializer
    filter_backends: list[Any] = []
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(request=RerunSerializer, responses={202: RunStartedSerializer, 409: OpenApiTypes.OBJECT})
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MiningRun, pk=pk)
        serializer = RerunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            job = mining_run_rerun_stage(
                run=run,
                stage=serializer.validated_data["stage"],
                config=serializer.validated_data.get("config"),
                created_by=request.user,  # type: ignore[arg-type]
            )
        except RunRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except ConfigError as exc:
            raise ValidationError({"config": str(exc)}) from exc
        return Response({"run": run.pk, "job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)


app_name = "mining-api"
urlpatterns = [
    path("runs/", RunList.as_view(), name="run-list"),
    path("runs/<int:pk>/", RunDetail.as_view(), name="run-detail"),
    path("runs/<int:pk>/funnel/", RunFunnel.as_view(), name="run-funnel"),
    path("runs/<int:pk>/rejections/", RunRejections.as_view(), name="run-rejections"),
    path("runs/<int:pk>/start/", RunStart.as_view(), name="run-start"),
    path("runs/<int:pk>/rerun/", RunRerun.as_view(), name="run-rerun"),
]
