"""REST API (DRF) for staff: leaderboards, procedures, generations, judgments, jobs and imports.

Authentication: a staff session, or a token (`python manage.py drf_create_token <username>`, then send
`Authorization: Token <key>`). Lists are paginated as {count, next, previous, results}.
Starting, cancelling and retrying jobs (POST /api/jobs/, /api/jobs/<id>/cancel/, /api/jobs/<id>/retry/)
also needs the judging.add_job permission; they call the services of judging/runs.py.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.contrib.auth.models import User
from django.db.models import Prefetch, Q, QuerySet
from django.urls import include, path, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter

from mining.models import Procedure, Split

from . import failures, rankings, selectors
from .models import CriticalFailure, Generation, Job, JobKind, JobStatus, Judgment
from .serializers import (
    FailurePageSerializer,
    GenerationSerializer,
    ImportRequestSerializer,
    JobCreateSerializer,
    JobSerializer,
    JudgmentSerializer,
    LeaderboardRowSerializer,
    ProcedureSerializer,
    RankCorrelationsSerializer,
    TopicLeaderboardRowSerializer,
)
from .uploads import UploadError, uploads_save


def query_ids(request: Request, name: str) -> list[str]:
    """Values of a filter given repeated (?judge=a&judge=b) or as a comma list (?judge=a,b)."""
    return [v.strip() for raw in request.query_params.getlist(name) for v in raw.split(",") if v.strip()]


_LEADERBOARD_FILTERS = [
    OpenApiParameter(
        "judge", OpenApiTypes.STR, many=True, description="judge_id; repeat it or give a comma list"
    ),
    OpenApiParameter(
        "generator", OpenApiTypes.STR, many=True, description="generator_id; repeat it or give a comma list"
    ),
]


class LeaderboardView(generics.GenericAPIView):
    """How2Score per generator x judge (h2e-compatible and strict), best first."""

    serializer_class = LeaderboardRowSerializer
    filter_backends: list[Any] = []

    @extend_schema(parameters=_LEADERBOARD_FILTERS, responses=LeaderboardRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = selectors.how2score_leaderboard(
            judge_ids=query_ids(request, "judge"), generator_ids=query_ids(request, "generator")
        )
        page = self.paginate_queryset(selectors.leaderboard_metrics_json(rows))  # type: ignore[arg-type]
        return self.get_paginated_response(page)


class TopicLeaderboardView(generics.GenericAPIView):
    """How2Score per generator x judge x topic (topic "" for judgments without one)."""

    serializer_class = TopicLeaderboardRowSerializer
    filter_backends: list[Any] = []

    @extend_schema(parameters=_LEADERBOARD_FILTERS, responses=TopicLeaderboardRowSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = selectors.how2score_by_topic(
            judge_ids=query_ids(request, "judge"), generator_ids=query_ids(request, "generator")
        )
        page = self.paginate_queryset([row.as_json() for row in rows])  # type: ignore[arg-type]
        return self.get_paginated_response(page)


_STRICT = OpenApiParameter(
    "score",
    OpenApiTypes.STR,
    enum=["h2e", "strict"],
    description="rank by How2Score (h2e, default) or strict",
)


class RankCorrelationView(generics.GenericAPIView):
    """Cross-judge robustness (paper figure 5): Kendall tau-b and Spearman rho between every two judges'
    rankings of the generators both judged, with the number of shared generators."""

    serializer_class = RankCorrelationsSerializer
    filter_backends: list[Any] = []
    pagination_class = None

    @extend_schema(parameters=[_STRICT, _LEADERBOARD_FILTERS[0]], responses=RankCorrelationsSerializer)
    def get(self, request: Request) -> Response:
        result = rankings.judge_rank_correlations(
            strict=request.query_params.get("score") == "strict", judge_ids=query_ids(request, "judge")
        )
        return Response(result.as_json())


_FAILURE_FILTERS = [
    OpenApiParameter("topic", OpenApiTypes.STR, description="topic name"),
    OpenApiParameter("generator", OpenApiTypes.STR, description="generator_id"),
    OpenApiParameter("judge", OpenApiTypes.STR, description="judge_id (judges' failures only)"),
    OpenApiParameter("study", OpenApiTypes.STR, description="study slug (human failures only)"),
    OpenApiParameter("source", OpenApiTypes.STR, enum=["judge", "human"], description="absent: both"),
    OpenApiParameter(
        "q",
        OpenApiTypes.STR,
        description="text search (PostgreSQL: full text, websearch syntax; else substring)",
    ),
    OpenApiParameter("cursor", OpenApiTypes.STR, description="next_cursor of the previous page"),
    OpenApiParameter("counts", OpenApiTypes.BOOL, description="also return counts_by_topic"),
]


class FailureListView(generics.GenericAPIView):
    """Critical failures from judges and human annotators, newest generation first, then judge before
    human, then judgment/annotation, then order; keyset-paginated (50 a page) by an opaque cursor."""

    serializer_class = FailurePageSerializer
    filter_backends: list[Any] = []
    pagination_class = None

    @extend_schema(
        parameters=_FAILURE_FILTERS, responses={200: FailurePageSerializer, 400: OpenApiTypes.OBJECT}
    )
    def get(self, request: Request) -> Response:
        query = failures.FailureQuery.from_params(request.query_params)
        token = request.query_params.get("cursor", "")
        try:
            cursor = failures.Cursor.decode(token) if token else None
        except ValueError as exc:
            return Response({"cursor": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        filters = failures.failure_filters_resolve(query, failures.filter_choices_for(query))
        page = failures.failure_page(filters=filters, cursor=cursor)
        data: dict[str, Any] = {
            "results": [row.as_json() for row in page.rows],
            "next_cursor": page.next_cursor,
            "next": _next_url(request, page.next_cursor),
        }
        if request.query_params.get("counts", "").lower() in {"1", "true", "yes"}:
            data["counts_by_topic"] = [
                {"topic": c.topic, "judge": c.judge, "human": c.human, "total": c.total}
                for c in failures.failure_counts_by_topic(filters=filters)
            ]
        return Response(data)


def _next_url(request: Request, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    params = request.query_params.copy()
    params["cursor"] = cursor
    return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")


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
    procedure = django_filters.NumberFilter(field_name="procedure_id", help_text="procedure id")
    source_example_id = django_filters.CharFilter(field_name="procedure__source_example_id")
    topic = django_filters.CharFilter(field_name="procedure__topic__name", help_text="topic name")

    class Meta:
        model = Generation
        fields = ["generator", "procedure", "source_example_id", "topic"]


class JudgmentFilter(django_filters.FilterSet):
    judge = CharInFilter(field_name="judge__judge_id", help_text="judge_id (comma list)")
    generator = CharInFilter(field_name="generator__generator_id", help_text="generator_id (comma list)")
    generation = django_filters.NumberFilter(field_name="generation_id", help_text="generation id")
    topic = django_filters.CharFilter(field_name="topic__name", help_text="topic name")
    parse_failed = django_filters.BooleanFilter()
    has_failure = django_filters.BooleanFilter()

    class Meta:
        model = Judgment
        fields = ["judge", "generator", "generation", "topic", "parse_failed", "has_failure"]


class JobFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=JobKind.choices)
    status = django_filters.ChoiceFilter(choices=JobStatus.choices)

    class Meta:
        model = Job
        fields = ["kind", "status"]


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
    ).prefetch_related(Prefetch("failures", queryset=CriticalFailure.objects.order_by("order")))
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter


class CanRunJobs(permissions.BasePermission):
    """Writes (start, cancel, retry a job) need judging.add_job; reads only the staff check."""

    message = "Starting or cancelling jobs needs the 'add job' permission."

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method in permissions.SAFE_METHODS or request.user.has_perm("judging.add_job")


class JobViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Long-running jobs with their progress, elapsed time and ETA; start generate and judge jobs."""

    queryset = Job.objects.select_related("created_by")
    serializer_class = JobSerializer
    filterset_class = JobFilter
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(
        request=JobCreateSerializer,
        responses={201: JobSerializer},
        description="Start a generate job (generator x procedures of a split) or a judge job (judge x the "
        "generations of a generator, or given generations). It is queued for a worker at once.",
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = JobCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            job = _job_create(form.validated_data, created_by=_user(request))
        except ValueError as exc:  # ConfigError: an imported generator/judge has no config to run with
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        headers = {"Location": reverse("api:job-detail", args=[job.pk])}
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED, headers=headers)

    @extend_schema(request=None, responses={200: JobSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued or running job (a running one stops starting requests within a second)."""
        from .runs import job_cancel

        job = self.get_object()
        if job.is_finished:
            return Response(
                {"detail": f"job {job.pk} is already {job.status}"}, status=status.HTTP_409_CONFLICT
            )
        return Response(JobSerializer(job_cancel(job=job)).data)

    @extend_schema(request=None, responses={201: JobSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        """Start a new job over the failed items of a generate or judge job."""
        from .runs import job_retry_failed

        job = self.get_object()
        if job.kind not in {JobKind.GENERATE, JobKind.JUDGE} or not job.failed:
            return Response(
                {"detail": f"job {job.pk} has no failed generate or judge items to retry"},
                status=status.HTTP_409_CONFLICT,
            )
        retry = job_retry_failed(job=job)
        return Response(JobSerializer(retry).data, status=status.HTTP_201_CREATED)


def _user(request: Request) -> User | None:
    return request.user if isinstance(request.user, User) else None


def _job_create(data: dict[str, Any], *, created_by: User | None) -> Job:
    from .runs import generate_job_create, judge_job_create

    if data["kind"] == "generate":
        return generate_job_create(
            generator=data["generator"],
            split=data.get("split"),
            procedure_ids=data.get("procedure_ids"),
            limit=data.get("limit"),
            created_by=created_by,
        )
    return judge_job_create(
        judge=data["judge"],
        generator=data["generator"],
        generation_ids=data.get("generation_ids"),
        mode=data["mode"],
        created_by=created_by,
    )


class ImportView(generics.GenericAPIView):
    """Upload bench files, or a .zip/.tar of an h2e out_root, and start an import job."""

    parser_classes = [MultiPartParser]
    serializer_class = ImportRequestSerializer
    filter_backends: list[Any] = []

    @extend_schema(request=ImportRequestSerializer, responses={201: JobSerializer})
    def post(self, request: Request) -> Response:
        form = ImportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            paths = uploads_save(files=form.validated_data["files"], kind=form.validated_data["kind"])
        except UploadError as exc:
            return Response({"files": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        from .services import import_job_create

        job = import_job_create(
            paths=paths,
            kind=form.validated_data["kind"],
            split=form.validated_data["split"],
            skip_invalid=form.validated_data["skip_invalid"],
            created_by=_user(request),
        )
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)


router = DefaultRouter()
router.register("procedures", ProcedureViewSet, basename="procedure")
router.register("generations", GenerationViewSet, basename="generation")
router.register("judgments", JudgmentViewSet, basename="judgment")
router.register("jobs", JobViewSet, basename="job")

app_name = "api"
urlpatterns = [
    path("leaderboard/", LeaderboardView.as_view(), name="leaderboard"),
    path("leaderboard/by-topic/", TopicLeaderboardView.as_view(), name="leaderboard-by-topic"),
    path("judges/rank-correlation/", RankCorrelationView.as_view(), name="judge-rank-correlation"),
    path("failures/", FailureListView.as_view(), name="failures"),
    path("imports/", ImportView.as_view(), name="imports"),
    path("", include(router.urls)),
]
