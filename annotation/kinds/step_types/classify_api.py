"""REST API (DRF, staff) of step-type classification:

GET /api/studies/<slug>/step-types/models/[?gold=study|set:<name>]   the models page's figures (Table 3)

Classification jobs start through POST /api/jobs/ {"kind": "classify_steps", "classifier_id", "study"}
(classify_serializers.ClassifyJobCreateSerializer, registered in the kind's job_types.py).
Mounted in the "api" namespace through the kind's `api_routes` (annotation/kinds/step_types/urls.py).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.models import Study
from annotation.kinds.step_types.classify_serializers import StepTypeModelsSerializer
from annotation.kinds.step_types.evaluation import GOLD_STUDY, step_type_models_table
from annotation.kinds.step_types.name import KIND
from h2e_site.api import query_params
from h2e_site.api_views import ComputedView


class StepTypeModelsQuerySerializer(serializers.Serializer):
    gold = serializers.CharField(
        required=False,
        max_length=200,
        default=GOLD_STUDY,
        help_text='whose labels are the reference: "study" (default: its participants\' majority) '
        "or \"set:<name>\" (an imported label set's majority on the study's procedures)",
    )


class StepTypeModelsView(ComputedView):
    """Each step-type classifier against the gold labels of a step-types study: precision, recall and F1
    per type and their macro "All" (the SIO paper's Table 3), overall and per topic, answers that could
    not be read counted apart, and the sequential/interchangeable contradiction rate beside the humans'.
    docs/reference/study-kinds.md and docs/reference/statistics.md define every figure."""

    serializer_class = StepTypeModelsSerializer

    @extend_schema(
        parameters=[StepTypeModelsQuerySerializer],
        responses={200: StepTypeModelsSerializer, 404: OpenApiTypes.OBJECT},
        operation_id="study_step_type_models",
    )
    def get(self, request: Request, slug: str) -> Response:
        study = Study.objects.filter(slug=slug, kind=KIND).first()
        if study is None:
            raise NotFound(f"no step-types study {slug!r}")
        try:
            gold = query_params(request, StepTypeModelsQuerySerializer)["gold"]
            table = step_type_models_table(study=study, source=gold)
        except LookupError as exc:  # a gold source naming nothing: like a study that is not there
            return Response({"gold": [str(exc)]}, status=status.HTTP_404_NOT_FOUND)
        return Response(self.get_serializer(table).data)
