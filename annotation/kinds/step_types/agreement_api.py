"""REST API (DRF, staff) of step-type agreement: the figures of the agreement page as JSON.

GET <prefix>?study=<slug>        a step-types study (its regular items)
GET <prefix>?label_set=<name>    an imported label set

Mounted through the kind's `api_urls` (annotation/kinds/step_types/urls.py) as /api/agreement/step-types/.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.beyond_majority import beyond_majority_json, question_estimates
from annotation.base.dawid_skene_api import DawidSkeneSerializer
from annotation.base.models import Study
from annotation.kinds.step_types.agreement import label_set_agreement, study_step_types_agreement
from annotation.kinds.step_types.models import StepTypeLabelSet
from annotation.kinds.step_types.name import KIND
from annotation.kinds.step_types.questions import step_type_questions
from h2e_site.api import ShareSerializer, query_params
from h2e_site.api_views import ComputedView


class StepTypesAgreementQuerySerializer(serializers.Serializer):
    study = serializers.SlugField(required=False, help_text="a step-types study's slug")
    label_set = serializers.CharField(
        required=False, max_length=200, help_text="an imported label set's name"
    )


class CellSerializer(serializers.Serializer):
    """One cell of Table 6."""

    kappa = serializers.FloatField(allow_null=True, help_text="average pairwise Cohen's kappa")
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha")
    pairs = serializers.IntegerField(help_text="annotator pairs averaged")
    items = serializers.IntegerField(help_text="items at least two annotators labelled")


class TypeCountsSerializer(serializers.Serializer):
    candidates = serializers.IntegerField()
    positives = serializers.IntegerField()
    negatives = serializers.IntegerField()
    ties = serializers.IntegerField()
    expert_yes = serializers.IntegerField()
    expert_no = serializers.IntegerField()
    unsure = serializers.IntegerField()


class StepTypesContradictionSerializer(serializers.Serializer):
    """measures.Contradiction.as_json(): the counts and the rate on both its bases."""

    sequential_and_interchangeable = serializers.IntegerField()
    comparable = serializers.IntegerField()
    sequential = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="the same as of_comparable's rate")
    of_comparable = ShareSerializer(
        help_text="both / comparable: the first pair (no counterpart) and undecided counterparts left out"
    )
    of_sequential = ShareSerializer(help_text="both / sequential: every sequential pair, the paper's base")


class AttentionSerializer(serializers.Serializer):
    prolific_pid = serializers.CharField()
    items = serializers.IntegerField()
    passed = serializers.IntegerField()
    total = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="null: no attention check")


class MajoritySerializer(serializers.Serializer):
    procedure = serializers.IntegerField()
    source_example_id = serializers.CharField(allow_blank=True)
    candidate = serializers.CharField()
    type = serializers.CharField()
    yes = serializers.IntegerField()
    no = serializers.IntegerField()
    holds = serializers.BooleanField(allow_null=True, help_text="null: a tie")
    expert = serializers.CharField(allow_null=True)


class StepTypesAgreementSerializer(serializers.Serializer):
    """Shape of StepTypesAgreement.as_json() with the study or label set it is about."""

    study = serializers.CharField(allow_null=True)
    label_set = serializers.CharField(allow_null=True)
    n_procedures = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    n_labels = serializers.IntegerField()
    columns = serializers.ListField(child=serializers.CharField())
    table = serializers.DictField(
        child=serializers.DictField(child=CellSerializer(allow_null=True)),
        help_text="row (a step type or a task-level answer) -> column (overall, a topic) -> cell",
    )
    counts = serializers.DictField(child=TypeCountsSerializer(), help_text="step type -> counts")
    contradiction = StepTypesContradictionSerializer()
    attention = AttentionSerializer(many=True)
    majorities = MajoritySerializer(many=True)
    dawid_skene = DawidSkeneSerializer(many=True, help_text="Dawid-Skene beside the majority (studies only)")


class StepTypesAgreementView(ComputedView):
    """Step-type agreement in the layout of the SIO paper's Table 6 (average pairwise Cohen's kappa and
    Krippendorff's alpha per type and task-level expert answer, overall and per topic), the majority of every
    candidate (ties and the Unsure expert flag included) with counts per type, the SEQUENTIAL and
    INTERCHANGEABLE contradiction rate on both its bases (`of_sequential`: every sequential pair, the paper's
    base; `of_comparable`, also `rate`: the pairs whose counterpart was decided), each k of n with its Wilson
    interval, and each participant's attention checks (studies only). A kappa or alpha that is undefined is
    null, with the reason in `kappa_undefined` / `alpha_undefined`.

    Rules the schema cannot state: give exactly one of `study` and `label_set` (both or neither: 400); one
    that does not exist (or a study that is not a step-types study): 404."""

    serializer_class = StepTypesAgreementSerializer

    @extend_schema(
        parameters=[StepTypesAgreementQuerySerializer],
        responses=StepTypesAgreementSerializer,
        operation_id="step_types_agreement",
    )
    def get(self, request: Request) -> Response:
        query = query_params(request, StepTypesAgreementQuerySerializer)
        slug, name = query.get("study", ""), query.get("label_set", "")
        if bool(slug) == bool(name):
            return Response(
                {"detail": "give exactly one of study=<slug> and label_set=<name>"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if slug:
            study = Study.objects.filter(slug=slug, kind=KIND).first()
            if study is None:
                raise NotFound(f"no step-types study {slug!r}")
            result = study_step_types_agreement(study=study)
            estimates = beyond_majority_json(question_estimates(step_type_questions(study)))
        else:
            label_set = StepTypeLabelSet.objects.filter(name=name).first()
            if label_set is None:
                raise NotFound(f"no label set {name!r}")
            result = label_set_agreement(label_set=label_set)
            estimates = []
        body = {
            "study": slug or None,
            "label_set": name or None,
            **result.as_json(),
            "dawid_skene": estimates,
        }
        return Response(body)
