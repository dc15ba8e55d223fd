"""REST API (DRF, staff) of model evaluation on goal-step tasks:

GET /api/tasks/<name>/models/[?split=test|train][&validated=1]
    per model and task: accuracy with its 95 % Wilson interval, overall and per topic, unparsable answers
    counted apart, and the candidates-only run beside (results.py). validated=1: only the test examples the
    crowd validation kept (409 while the set has no validation results).

Answer jobs start through POST /api/jobs/ {"kind": "answer_tasks", "model_id", "task_set", "split",
"candidates_only"} (answer_serializers.AnswerJobCreateSerializer, registered in job_types.py).
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api import QueryBooleanField, query_params
from h2e_site.api_views import ComputedView

from .answer_serializers import TaskModelsSerializer
from .human_labels import validated_pks
from .models import TaskSet, TaskSplit
from .results import task_models_results


class TaskModelsQuerySerializer(serializers.Serializer):
    split = serializers.ChoiceField(
        choices=list(TaskSplit.values), default=TaskSplit.TEST, help_text="default test"
    )
    validated = QueryBooleanField(
        required=False, default=False, help_text="only the test examples the crowd validation kept"
    )


class TaskModelsView(ComputedView):
    """Each model's accuracy on the task set's examples, per task and per topic, with 95 % Wilson intervals;
    unparsable answers count as wrong and are counted apart; the same model's candidates-only run is its own
    artifact check (chance: 25 % for the 4-way tasks, 50 % for Step Ordering)."""

    serializer_class = TaskModelsSerializer

    @extend_schema(
        parameters=[TaskModelsQuerySerializer],
        responses={200: TaskModelsSerializer, 409: OpenApiTypes.OBJECT},
        operation_id="task_set_models",
    )
    def get(self, request: Request, name: str) -> Response:
        task_set = TaskSet.objects.filter(name=name).first()
        if task_set is None:
            raise NotFound(f"no task set {name!r}")
        query = query_params(request, TaskModelsQuerySerializer)
        split = query["split"]
        only = None
        if query["validated"]:
            only = validated_pks(task_set)
            if only is None:
                detail = f"task set {name!r} has no validation results yet"
                return Response({"validated": [detail]}, status.HTTP_409_CONFLICT)
        table = task_models_results(task_set, split=split, only=only)
        return Response(self.get_serializer(table).data)


# Mounted by h2e_site/urls.py under the "api" namespace.
api_urlpatterns = [
    path("tasks/<slug:name>/models/", TaskModelsView.as_view(), name="task-models"),
]
