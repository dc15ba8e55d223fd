"""The critical-failures kind's agreement API, mounted through the kind's `api_urls`
(annotation/kinds/critical_failures/urls.py): human agreement on has_failure (Krippendorff's alpha with a
bootstrap CI, leave-one-out agreement) and each judge's agreement with the human majority, per class, with
Cohen's kappa and a confusion matrix.

GET /api/agreement/?study=<slug>            one study, with every judge that judged its L2
GET /api/agreement/?study=a&study=b         several studies pooled (an item of each is a unit of its own)
GET /api/agreement/                         every study pooled
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.beyond_majority import beyond_majority_json, question_estimates
from annotation.base.dawid_skene_api import DawidSkeneSerializer
from annotation.base.models import Study
from annotation.base.types import KINDS_INDEX, KindEntry
from annotation.kinds.critical_failures.agreement_data import (
    JudgeFigures,
    StudyAgreement,
    studies_agreement,
    study_agreement,
)
from annotation.kinds.critical_failures.name import AGREEMENT_API  # this view's URL name
from annotation.kinds.critical_failures.questions import has_failure_question
from h2e_site.api import comma_list, query_params
from h2e_site.api_views import ComputedView
from h2e_site.stats.verdicts import Agreement


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
    dawid_skene = serializers.SerializerMethodField(
        help_text="Dawid-Skene beside the majority on has_failure (one study only; pooled: empty)"
    )

    @extend_schema_field(DawidSkeneSerializer(many=True))
    def get_dawid_skene(self, result: StudyAgreement) -> list[dict[str, Any]]:
        return list(self.context.get("dawid_skene", []))

    def get_loo_agreement_pooled(self, result: StudyAgreement) -> float | None:
        pooled: Agreement = result.loo_pooled
        return pooled.rate


class AgreementQuerySerializer(serializers.Serializer):
    study = comma_list("study slug; several are pooled; none: every study pooled (judges: one study)")


class AgreementView(ComputedView):
    """Human agreement (Krippendorff's alpha with a bootstrap CI, leave-one-out agreement) and each judge's
    agreement with the human majority, per class, with Cohen's kappa and a confusion matrix."""

    serializer_class = AgreementSerializer

    @extend_schema(parameters=[AgreementQuerySerializer])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        slugs = query_params(request, AgreementQuerySerializer).get("study", [])
        covered = Study.objects.filter(kind__in=list(_covered_kinds()))
        studies = list(covered.filter(slug__in=slugs)) if slugs else list(covered)
        missing = sorted(set(slugs) - {study.slug for study in studies})
        other_kind = Study.objects.filter(slug__in=missing).order_by("slug")
        if other_kind:
            raise ValidationError({"study": [_other_kind(study) for study in other_kind]})
        if missing:
            raise NotFound(f"no study {', '.join(missing)}")
        if len(studies) != 1:
            return Response(self.get_serializer(studies_agreement(studies=studies)).data)
        estimates = beyond_majority_json(question_estimates([has_failure_question(studies[0])]))
        serializer = self.get_serializer(
            study_agreement(study=studies[0]), context={"dawid_skene": estimates}
        )
        return Response(serializer.data)


def _covered_kinds() -> dict[str, KindEntry]:
    """The kinds this view covers: those whose agreement_api is its URL name."""
    return {name: entry for name, entry in KINDS_INDEX.items() if entry.agreement_api == AGREEMENT_API}


def _other_kind(study: Study) -> str:
    """Why a study of another kind is refused here (named as the registry indexes it), and where its
    agreement is: the kind's own endpoint, if it has one, and its agreement page."""
    entry = KINDS_INDEX[study.kind]
    where = reverse("agreement:study", args=[study.slug])
    if entry.agreement_api:
        where = f"{reverse(entry.agreement_api)}?study={study.slug} or {where}"
    covered = " or ".join(kind.noun for kind in _covered_kinds().values())
    return f"{study.slug}: a {entry.noun} study (this endpoint covers {covered} studies); see {where}"


__all__ = ["AGREEMENT_API", "AgreementView"]
