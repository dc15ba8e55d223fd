"""REST API (DRF) of the annotation side, for staff: agreement of a study, humans and judges.

GET /api/agreement/?study=<slug>            one study, with every judge that judged its L2
GET /api/agreement/?study=a&study=b         several studies pooled (an item of each is a unit of its own)
GET /api/agreement/                         every study pooled
"""

from __future__ import annotations

from typing import Any

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from judging.api import query_ids

from .agreement import Agreement
from .agreement_data import JudgeFigures, StudyAgreement, studies_agreement, study_agreement
from .models import Study


class AnnotatorAgreementSerializer(serializers.Serializer):
    participant = serializers.IntegerField(source="participant_id")
    prolific_pid = serializers.CharField()
    study = serializers.CharField(source="study_slug")
    n_items = serializers.IntegerField()
    agreement = serializers.FloatField(
        source="loo.rate", allow_null=True, help_text="with the others' majority"
    )
    n_compared = serializers.IntegerField(source="loo.n")
    n_ties = serializers.IntegerField(source="loo.ties", help_text="items where the others tie: not compared")
    median_active_seconds = serializers.FloatField(allow_null=True)
    median_elapsed_seconds = serializers.FloatField(allow_null=True)
    attention_score = serializers.FloatField(allow_null=True)
    attention_checks = serializers.IntegerField(source="attention_total")


class JudgeAgreementSerializer(serializers.Serializer):
    judge_id = serializers.CharField(source="judge.judge_id")
    model = serializers.CharField(source="judge.model")
    is_demo_model = serializers.BooleanField(source="judge.is_demo_model")
    agreement = serializers.FloatField(source="agreement.overall.rate", allow_null=True)
    agreement_has_failure = serializers.FloatField(source="agreement.has_failure.rate", allow_null=True)
    agreement_no_failure = serializers.FloatField(source="agreement.no_failure.rate", allow_null=True)
    cohen_kappa = serializers.FloatField(source="agreement.cohen_kappa", allow_null=True)
    n = serializers.IntegerField(source="agreement.overall.n")
    n_has_failure = serializers.IntegerField(source="agreement.has_failure.n")
    n_no_failure = serializers.IntegerField(source="agreement.no_failure.n")
    n_ties = serializers.IntegerField(source="agreement.overall.ties", help_text="items the humans tie on")
    n_not_judged = serializers.IntegerField(source="agreement.n_not_judged")
    n_parse_failed = serializers.IntegerField()
    confusion = serializers.SerializerMethodField(
        help_text="counts by human majority (rows) and judge label (columns)"
    )

    def get_confusion(self, figures: JudgeFigures) -> dict[str, dict[str, int]]:
        names = {True: "has_failure", False: "no_failure"}
        matrix = figures.agreement.confusion
        return {names[h]: {names[j]: matrix[h][j] for j in (True, False)} for h in (True, False)}


class AgreementSerializer(serializers.Serializer):
    studies = serializers.ListField(child=serializers.CharField(), source="slugs")
    alpha_binary = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha, nominal")
    ci_low = serializers.FloatField(
        source="ci.low", allow_null=True, help_text="bootstrap 95 % CI over items"
    )
    ci_high = serializers.FloatField(source="ci.high", allow_null=True)
    bootstrap_samples = serializers.IntegerField(source="ci.samples")
    alpha_first_failure = serializers.FloatField(allow_null=True)
    alpha_step_sets = serializers.FloatField(allow_null=True, help_text="MASI distance over linked steps")
    n_items = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    n_labels = serializers.IntegerField()
    n_human_ties = serializers.IntegerField()
    loo_agreement_pooled = serializers.SerializerMethodField()
    loo_agreement = AnnotatorAgreementSerializer(many=True, source="annotators")
    judges = JudgeAgreementSerializer(many=True)

    def get_loo_agreement_pooled(self, result: StudyAgreement) -> float | None:
        pooled: Agreement = result.loo_pooled
        return pooled.rate


class AgreementView(generics.GenericAPIView):
    """Human agreement (Krippendorff's alpha with a bootstrap CI, leave-one-out agreement) and each judge's
    agreement with the human majority, per class, with Cohen's kappa and a confusion matrix."""

    serializer_class = AgreementSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "study",
                OpenApiTypes.STR,
                many=True,
                description="study slug; several are pooled; none: every study pooled (judges: one study)",
            )
        ]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        slugs = query_ids(request, "study")
        studies = list(Study.objects.filter(slug__in=slugs)) if slugs else list(Study.objects.all())
        missing = sorted(set(slugs) - {study.slug for study in studies})
        if missing:
            raise NotFound(f"no study {', '.join(missing)}")
        if len(studies) == 1:
            result = study_agreement(study=studies[0])
        else:
            result = studies_agreement(studies=studies)
        return Response(self.get_serializer(result).data)


urlpatterns = [path("agreement/", AgreementView.as_view(), name="agreement-api")]
