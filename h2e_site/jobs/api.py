"""The jobs API (staff): list and follow jobs of every kind, start one (POST /api/jobs/ with its kind's body),
cancel it, retry its failed items. Writes need the jobs.add_job permission."""

from __future__ import annotations

from typing import Any

import django_filters
from django.urls import reverse
from django.utils.module_loading import import_string
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api import refuse_odd_values, single_and_list_fields
from h2e_site.web import CanRunJobs, request_user

from . import services
from .models import Job, JobStatus
from .registry import JobType, RegisteredKinds, job_types
from .serializers import JobSerializer


class JobFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=RegisteredKinds())
    status = django_filters.ChoiceFilter(choices=JobStatus.choices)

    class Meta:
        model = Job
        fields = ["kind", "status"]


def _creatable() -> dict[str, JobType]:
    return {t.kind: t for t in job_types() if t.api_create is not None and t.create_serializer}


def _create_serializers() -> list[Any]:
    paths = dict.fromkeys(job_type.create_serializer for job_type in _creatable().values())
    return [import_string(path) for path in paths]


class JobViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Long-running jobs with their progress, elapsed time and ETA; start, cancel and retry them."""

    queryset = Job.objects.select_related("created_by")
    serializer_class = JobSerializer
    filterset_class = JobFilter
    permission_classes = [permissions.IsAdminUser, CanRunJobs]

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="JobStart", serializers=_create_serializers, resource_type_field_name=None
        ),
        responses={201: JobSerializer, 503: OpenApiTypes.OBJECT},
        description="Start a job: the body's `kind` says which, and the rest of the body is that kind's (one "
        "schema per kind below). It is queued for a worker at once. 503 when the job broker cannot be "
        "reached: the job is stored as failed, never ran, and `detail` says how to run it.\n\n"
        "Rules the schema cannot state (each a 400 naming its field): a row the body names must exist; a "
        "new row's name must not be taken; and the kind's own checks must hold (e.g. a model imported "
        "without a config to run with cannot run). Each kind's schema below says what it names.",
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        creatable = _creatable()
        kind = request.data.get("kind")  # the body is an object (h2e_site.api.ObjectJSONParser)
        if not isinstance(kind, str) or kind not in creatable:
            expected = ", ".join(sorted(creatable))
            shown = repr(kind) if len(repr(kind)) <= 40 else repr(kind)[:37] + "..."
            raise serializers.ValidationError(
                {"kind": [f"{shown} is not a kind of job started here: {expected}"]}
            )
        job_type = creatable[kind]
        form_class = import_string(job_type.create_serializer)
        single, lists = single_and_list_fields(dict(form_class().fields))
        refuse_odd_values(request.data, single=single, lists=lists)  # a form body: nothing empty or repeated
        form = form_class(data=request.data)
        form.is_valid(raise_exception=True)
        assert job_type.api_create is not None
        try:
            with services.jobs_not_queued() as not_queued:
                job = job_type.api_create(form.validated_data, request_user(request))
        except ValueError as exc:  # e.g. a model row imported without a config to run with
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        if not_queued:
            return not_queued_response(not_queued)
        headers = {"Location": reverse("api:job-detail", args=[job.pk])}
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED, headers=headers)

    @extend_schema(request=None, responses={200: JobSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued or running job (a running one stops starting requests within a second)."""
        job = self.get_object()
        if job.is_finished:
            return Response(
                {"detail": f"job {job.pk} is already {job.status}"}, status=status.HTTP_409_CONFLICT
            )
        return Response(JobSerializer(services.job_cancel(job=job)).data)

    @extend_schema(request=None, responses={201: JobSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        """Start a new job over the failed items of a job of a retryable kind."""
        job = self.get_object()
        if not services.job_can_retry(job):
            return Response(
                {"detail": f"job {job.pk} has no failed items of a retryable kind to retry"},
                status=status.HTTP_409_CONFLICT,
            )
        try:
            retry = services.job_retry_failed(job=job, created_by=request_user(request))
        except services.NothingToRetry as nothing:
            return Response({"detail": str(nothing)}, status=status.HTTP_409_CONFLICT)
        return Response(JobSerializer(retry).data, status=status.HTTP_201_CREATED)


def not_queued_response(not_queued: list[Job]) -> Response:
    """503 for a request whose job could not be queued (the broker unreachable): what was stored stays
    (the job row, failed; an upload's files), and `detail` says the job never ran and how to run it."""
    job = not_queued[0]
    body = {"detail": job.error, "job": JobSerializer(job).data}
    return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)


# Mounted by h2e_site/urls.py on the one API router, under the "api" namespace: /api/jobs/.
ROUTES = [("jobs", JobViewSet, "job")]
