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
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.llm.config import ConfigError
from h2e_site.web import RUN_PERMISSION

from .models import STAGE_ORDER, MiningRun, StageOutcome
from .runs import RunBusy, mining_run_rerun_stage, mining_run_start
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


class RunFunnel(generics.GenericAPIView):
    """The run's yield funnel: per topic and stage, processed / passed / yield % (of the topic's input
    documents) / pass rate % (of what the stage processed), tokens and cost; and the totals."""

    queryset = MiningRun.objects.all()

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MiningRun, pk=pk)
        return Response(run_funnel(run).as_json())


class RunRejections(generics.ListAPIView):
    """The documents a stage rejected in the run, with the reason (and the parsed answer)."""

    serializer_class = RejectionSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("stage", OpenApiTypes.STR, required=True, enum=list(STAGE_ORDER)),
            OpenApiParameter("topic", OpenApiTypes.STR, description="only this topic's documents"),
        ]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[StageOutcome]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return StageOutcome.objects.none()
        run = get_object_or_404(MiningRun, pk=self.kwargs["pk"])
        stage = self.request.query_params.get("stage", "")
        if stage not in STAGE_ORDER:
            raise ValidationError({"stage": f"one of {', '.join(STAGE_ORDER)}"})
        return stage_rejections(run, stage, topic=self.request.query_params.get("topic") or None)


class CanRunJobs(permissions.BasePermission):
    """Starting a run needs jobs.add_job on top of the staff check."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.has_perm(RUN_PERMISSION))


class RerunSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=list(STAGE_ORDER))
    config = serializers.JSONField(required=False, help_text="a new run config (e.g. another prompt_path)")


class RunStart(generics.GenericAPIView):
    """Start or resume the run: a new MINE job that sends only what has no outcome yet."""

    queryset = MiningRun.objects.all()
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MiningRun, pk=pk)
        try:
            job = mining_run_start(run=run, created_by=request.user)  # type: ignore[arg-type]
        except RunBusy as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"run": run.pk, "job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)


class RunRerun(generics.GenericAPIView):
    """Re-run the run from a stage (optionally with a new run config)."""

    queryset = MiningRun.objects.all()
    serializer_class = RerunSerializer
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(request=RerunSerializer, responses=OpenApiTypes.OBJECT)
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
        except RunBusy as exc:
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
