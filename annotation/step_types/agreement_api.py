"""REST API (DRF, staff) of step-type agreement: the figures of the agreement page as JSON.

GET <prefix>?study=<slug>        a step-types study (its regular items)
GET <prefix>?label_set=<name>    an imported label set

Mounted by annotation/api.py as /api/agreement/step-types/.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from ..models import StepTypeLabelSet, Study, StudyKind
from .agreement import label_set_agreement, study_step_types_agreement


class StepTypesAgreementView(generics.GenericAPIView):
    """Step-type agreement in the layout of the SIO paper's Table 6 (average pairwise Cohen's kappa and
    Krippendorff's alpha per type and task-level expert answer, overall and per topic), the majority of every
    candidate (ties and the Unsure expert flag included) with counts per type, the SEQUENTIAL and
    INTERCHANGEABLE contradiction rate on both its bases (`of_sequential`: every sequential pair, the paper's
    base; `of_comparable`, also `rate`: the pairs whose counterpart was decided), each k of n with its Wilson
    interval, and each participant's attention checks (studies only). A kappa or alpha that is undefined is
    null, with the reason in `kappa_undefined` / `alpha_undefined`."""

    filter_backends: list[Any] = []
    pagination_class = None

    @extend_schema(
        parameters=[
            OpenApiParameter("study", OpenApiTypes.STR, description="a step-types study's slug"),
            OpenApiParameter("label_set", OpenApiTypes.STR, description="an imported label set's name"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        operation_id="step_types_agreement",
    )
    def get(self, request: Request) -> Response:
        slug = request.query_params.get("study", "").strip()
        name = request.query_params.get("label_set", "").strip()
        if bool(slug) == bool(name):
            return Response(
                {"detail": "give exactly one of study=<slug> and label_set=<name>"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if slug:
            study = Study.objects.filter(slug=slug, kind=StudyKind.STEP_TYPES).first()
            if study is None:
                raise NotFound(f"no step-types study {slug!r}")
            result = study_step_types_agreement(study=study)
        else:
            label_set = StepTypeLabelSet.objects.filter(name=name).first()
            if label_set is None:
                raise NotFound(f"no label set {name!r}")
            result = label_set_agreement(label_set=label_set)
        return Response({"study": slug or None, "label_set": name or None, **result.as_json()})
