from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Job
from .registry import job_api_parameters, job_kind_choices
from .services import job_elapsed_seconds, job_seconds_remaining


class JobSerializer(serializers.ModelSerializer):
    """A job with its progress. `parameters` leaves out the item list (`items`: total says how many)."""

    created_by = serializers.CharField(
        source="created_by.username",
        default=None,
        read_only=True,
        allow_null=True,
        help_text="who started it (null: a command or the worker)",
    )
    progress_percent = serializers.FloatField(read_only=True)
    is_finished = serializers.BooleanField(read_only=True)
    parameters = serializers.SerializerMethodField()
    elapsed_seconds = serializers.SerializerMethodField(help_text="since it started (to its end if finished)")
    eta_seconds = serializers.SerializerMethodField(
        help_text="estimated seconds left for a running job, from its rate so far (null until known)"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "parameters",
            "total",
            "done",
            "failed",
            "progress_percent",
            "is_finished",
            "elapsed_seconds",
            "eta_seconds",
            "error",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "updated_at",
        ]

    def get_fields(self) -> dict[str, serializers.Field]:
        """The declared fields, with the kind among the registered ones and, after the parameters, those
        parameters the registered kinds show at the top level (null when a job has none)."""
        fields: dict[str, serializers.Field] = {}
        for name, field in super().get_fields().items():
            fields[name] = field
            if name == "parameters":
                fields |= {
                    key: serializers.CharField(
                        source=f"parameters.{key}", read_only=True, allow_null=True, help_text=help_text
                    )
                    for key, help_text in job_api_parameters().items()
                }
        fields["kind"] = serializers.ChoiceField(
            choices=job_kind_choices(), read_only=True, help_text="the kind of job (its app registers it)"
        )
        return fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_parameters(self, job: Job) -> dict[str, Any]:
        return {key: value for key, value in job.parameters.items() if key != "items"}

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_elapsed_seconds(self, job: Job) -> float | None:
        return job_elapsed_seconds(job, now=self._now())

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_eta_seconds(self, job: Job) -> float | None:
        return job_seconds_remaining(job, now=self._now())

    def _now(self) -> Any:
        if "now" not in self.context:
            self.context["now"] = timezone.now()
        return self.context["now"]
