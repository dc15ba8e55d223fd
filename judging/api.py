"""REST API (DRF) for staff: leaderboards, rank correlations, procedures, generations, judgments, imports.

Authentication: a staff session, or a token (`python manage.py drf_create_token <username>`, then send
`Authorization: Token <key>`). Lists are paginated as {count, next, previous, results}.
Jobs (/api/jobs/) are the core's API (h2e_site/jobs/api.py); generate and judge jobs are started there with
this app's JobCreateSerializer body (registered in job_types.py).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status, viewsets
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api import IdFilter, StrictBooleanFilter, StrictPageNumberPagination, comma_list, query_params
from h2e_site.api_views import ComputedView
from h2e_site.jobs.api import not_queued_response
from h2e_site.jobs.serializers import JobSerializer
from h2e_site.jobs.services import jobs_not_queued
from h2e_site.web import CanRunJobs, request_user
from mining.models import Procedure, Split

from . import paired, rankings, selectors
from .import_jobs import import_job_create
from .models import Generation, Judgment
from .serializers import (
    GenerationSerializer,
    ImportRequestSerializer,
    JudgePairsSerializer,
    JudgmentSerializer,
    LeaderboardPairedRowSerializer,
    ProcedureSerializer,
    RankCorrelationsSerializer,
    TopicLeaderboardRowSerializer,
)
from .training.api import RewardView
from .training.checkpoint_api import CheckpointTableView
from .training.runs_api import TrainingRunDetailView, TrainingRunListView
from .uploads import UploadError, uploads_save


class JudgeQuerySerializer(serializers.Serializer):
    judge = comma_list("judge_id; repeat it or give a comma list")


class ScoreQuerySerializer(JudgeQuerySerializer):
    generator = comma_list("generator_id; repeat it or give a comma list")


class RankCorrelationQuerySerializer(JudgeQuerySerializer):
    score = serializers.ChoiceField(
        choices=["h2e", "strict"], default="h2e", help_text="rank by How2Score (h2e, default) or strict"
    )


class WholeTable(StrictPageNumberPagination):
    """A leaderboard comes whole, in one page ({count, next, previous, results}, next null): a client that
    reads one page has the table. (Beyond 100,000 rows - generators x judges x topics - `next` links on.)"""

    page_size = 100_000


class LeaderboardView(ComputedView):
    """How2Score per generator x judge (h2e-compatible and strict), best first; the whole table."""

    serializer_class = LeaderboardPairedRowSerializer
    pagination_class = WholeTable

    @extend_schema(parameters=[ScoreQuerySerializer], responses=LeaderboardPairedRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        query = query_params(request, ScoreQuerySerializer)
        judges, generators = query.get("judge", []), query.get("generator", [])
        rows = selectors.how2score_leaderboard(judge_ids=judges, generator_ids=generators)
        # The rows' count is the judges' judgments unless a generator filter left some out.
        n_judgments = None if generators else sum(row.score.total for row in rows)
        pairs = paired.paired_tests(judges or None, n_judgments=n_judgments)
        page = self.paginate_queryset(paired.leaderboard_paired_json(rows, pairs))  # type: ignore[arg-type]
        return self.get_paginated_response(page)


class PairedTestsView(ComputedView):
    """Per judge: the exact McNemar test of every pair of its generators (Holm-adjusted); separability."""

    serializer_class = JudgePairsSerializer

    @extend_schema(parameters=[JudgeQuerySerializer], responses=JudgePairsSerializer(many=True))
    def get(self, request: Request) -> Response:
        pairs = paired.paired_tests(query_params(request, JudgeQuerySerializer).get("judge") or None)
        return Response([judge_pairs.as_json() for judge_pairs in pairs.values()])


class TopicLeaderboardView(ComputedView):
    """How2Score per generator x judge x topic (topic "" for judgments without one); the whole table."""

    serializer_class = TopicLeaderboardRowSerializer
    pagination_class = WholeTable

    @extend_schema(parameters=[ScoreQuerySerializer], responses=TopicLeaderboardRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        query = query_params(request, ScoreQuerySerializer)
        rows = selectors.how2score_by_topic(
            judge_ids=query.get("judge", []), generator_ids=query.get("generator", [])
        )
        page = self.paginate_queryset([row.as_json() for row in rows])  # type: ignore[arg-type]
        return self.get_paginated_response(page)


class RankCorrelationView(ComputedView):
    """Cross-judge robustness (paper figure 5): Kendall tau-b and Spearman rho between every two judges'
    rankings of the generators both judged, with the number of shared generators."""

    serializer_class = RankCorrelationsSerializer

    @extend_schema(parameters=[RankCorrelationQuerySerializer], responses=RankCorrelationsSerializer)
    def get(self, request: Request) -> Response:
        query = query_params(request, RankCorrelationQuerySerializer)
        result = rankings.judge_rank_correlations(
            strict=query["score"] == "strict", judge_ids=query.get("judge", [])
        )
        return Response(result.as_json())


class CharInFilter(django_filters.BaseInFilter, django_filters.CharFilter):
    """A comma list of strings (?judge=a,b)."""


class ProcedureFilter(django_filters.FilterSet):
    topic = django_filters.CharFilter(field_name="topic__name", help_text="topic name")
    split = django_filters.ChoiceFilter(choices=Split.choices)
    q = django_filters.CharFilter(method="filter_q", help_text="text in the goal or source_example_id")

    class Meta:
        model = Procedure
        fields = ["topic", "split", "q"]

    def filter_q(self, queryset: QuerySet[Procedure], name: str, value: str) -> QuerySet[Procedure]:
        return queryset.filter(Q(goal__icontains=value) | Q(source_example_id__icontains=value))


class GenerationFilter(django_filters.FilterSet):
    generator = CharInFilter(field_name="generator__generator_id", help_text="generator_id (comma list)")
    procedure = IdFilter(field_name="procedure_id", help_text="procedure id")
    source_example_id = django_filters.CharFilter(field_name="procedure__source_example_id")
    topic = django_filters.CharFilter(field_name="procedure__topic__name", help_text="topic name")

    class Meta:
        model = Generation
        fields = ["generator", "procedure", "source_example_id", "topic"]


class JudgmentFilter(django_filters.FilterSet):
    judge = CharInFilter(field_name="judge__judge_id", help_text="judge_id (comma list)")
    generator = CharInFilter(field_name="generator__generator_id", help_text="generator_id (comma list)")
    generation = IdFilter(field_name="generation_id", help_text="generation id")
    topic = django_filters.CharFilter(field_name="topic__name", help_text="topic name")
    parse_failed = StrictBooleanFilter()
    has_failure = StrictBooleanFilter()

    class Meta:
        model = Judgment
        fields = ["judge", "generator", "generation", "topic", "parse_failed", "has_failure"]


class ProcedureViewSet(viewsets.ReadOnlyModelViewSet):
    """Reference procedures (L1)."""

    queryset = Procedure.objects.select_related("topic")
    serializer_class = ProcedureSerializer
    filterset_class = ProcedureFilter


class GenerationViewSet(viewsets.ReadOnlyModelViewSet):
    """Generations (L2) with their generator and procedure."""

    queryset = Generation.objects.select_related("generator", "procedure__topic")
    serializer_class = GenerationSerializer
    filterset_class = GenerationFilter


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Judgments with their critical failures (L1/L2 step links) nested."""

    queryset = Judgment.objects.select_related(
        "judge", "generator", "topic", "generation__procedure"
    ).with_failures()
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter


class ImportView(generics.GenericAPIView):
    """Upload bench files, or a .zip/.tar of an h2e out_root, and start an import job.

    Rules the schema cannot state (a 400 naming `files`): at least one file; with `kind` h2e, each file a
    readable .zip or .tar(.gz) of an out_root whose members stay inside it. What the files hold is checked by
    the import job, which reports each line it refuses."""

    parser_classes = [MultiPartParser]
    serializer_class = ImportRequestSerializer
    filter_backends: list[Any] = []
    permission_classes = [permissions.IsAdminUser, CanRunJobs]  # an import is a job: it needs jobs.add_job

    @extend_schema(
        request=ImportRequestSerializer,
        responses={201: JobSerializer, 503: OpenApiTypes.OBJECT},
        description="Upload bench files, or a .zip/.tar of an h2e out_root, and start an import job. 503 "
        "when the job broker cannot be reached: the files are saved, the job is stored as failed and never "
        "ran, and `detail` gives the command that imports them.\n\nRules the schema cannot state (a 400 "
        "naming `files`): at least one file; with `kind` h2e, each file a readable .zip or .tar(.gz) of an "
        "out_root whose members stay inside it. What the files hold is checked by the import job, which "
        "reports each line it refuses.",
    )
    def post(self, request: Request) -> Response:
        form = ImportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            paths = uploads_save(files=form.validated_data["files"], kind=form.validated_data["kind"])
        except UploadError as exc:
            return Response({"files": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        with jobs_not_queued() as not_queued:
            job = import_job_create(
                paths=paths,
                kind=form.validated_data["kind"],
                split=form.validated_data["split"],
                skip_invalid=form.validated_data["skip_invalid"],
                created_by=request_user(request),
            )
        if not_queued:  # the files are saved; the job's error says how to import them
            return not_queued_response(not_queued)
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)


# Mounted by h2e_site/urls.py on the one API router and path list, under the "api" namespace.
ROUTES = [
    ("procedures", ProcedureViewSet, "procedure"),
    ("generations", GenerationViewSet, "generation"),
    ("judgments", JudgmentViewSet, "judgment"),
]
urlpatterns = [
    path("leaderboard/", LeaderboardView.as_view(), name="leaderboard"),
    path("leaderboard/by-topic/", TopicLeaderboardView.as_view(), name="leaderboard-by-topic"),
    path("leaderboard/pairs/", PairedTestsView.as_view(), name="leaderboard-pairs"),
    path("judges/rank-correlation/", RankCorrelationView.as_view(), name="judge-rank-correlation"),
    path("imports/", ImportView.as_view(), name="imports"),
    path("reward/", RewardView.as_view(), name="reward"),
    path(
        "training/runs/<path:name>/checkpoints/", CheckpointTableView.as_view(), name="training-checkpoints"
    ),
    path("training/runs/", TrainingRunListView.as_view(), name="training-runs"),
    path("training/runs/<path:name>/", TrainingRunDetailView.as_view(), name="training-run"),
]
