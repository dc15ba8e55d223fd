"""A judge's report card as JSON (DRF, staff): GET /api/judges/<judge_id>/report-card/ (report_card.py has
the definitions). Mounted through the kind's `api_urls` (annotation/kinds/critical_failures/urls.py).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.kinds.critical_failures.report_card import report_card
from h2e_site.api import ShareSerializer
from h2e_site.api_views import ComputedView
from judging.models import Judge


class InstrumentSerializer(serializers.Serializer):
    n_judgments = serializers.IntegerField()
    parse_failures = ShareSerializer()
    n_request_errors = serializers.IntegerField()


class BaselineSerializer(serializers.Serializer):
    name = serializers.CharField()
    agreement = ShareSerializer()
    note = serializers.CharField(allow_blank=True)


class GoldComparisonSerializer(serializers.Serializer):
    """A study's agreement with its adjudicated gold (report_card.GoldComparison), on the items with gold and
    a verdict of the judge; the shares are 0 of 0, with the reason in gold_undefined, when there is none."""

    gold_n_items = serializers.IntegerField(help_text="items with gold (as of now) and a judge verdict")
    gold_agreement = ShareSerializer(help_text="the judge's has_failure equals the gold's")
    gold_majority_agreement = ShareSerializer(
        help_text="the judge with the human majority on the same items (ties and unlabelled left out)"
    )
    crowd_gold_agreement = ShareSerializer(
        help_text="the human majority with gold on the same items (ties and unlabelled left out)"
    )
    gold_n_human_ties = serializers.IntegerField(help_text="gold items the humans tie on: left out")
    gold_n_unlabelled = serializers.IntegerField(help_text="gold items without a human label yet: left out")
    gold_undefined = serializers.CharField(allow_blank=True, help_text="why there is no gold figure")


class StudyCardSerializer(GoldComparisonSerializer):
    study = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    n_items = serializers.IntegerField()
    n_human_ties = serializers.IntegerField()
    agreement = ShareSerializer()
    agreement_on_has_failure = ShareSerializer()
    agreement_on_no_failure = ShareSerializer()
    cohen_kappa = serializers.FloatField(allow_null=True)
    cohen_kappa_undefined = serializers.CharField(allow_blank=True, help_text="why kappa is null ('' if not)")
    gwet_ac1 = serializers.FloatField(allow_null=True)
    gwet_ac1_undefined = serializers.CharField(allow_blank=True, help_text="why AC1 is null ('' if not)")
    human_loo_low = serializers.FloatField(allow_null=True)
    human_loo_high = serializers.FloatField(allow_null=True)
    human_loo_pooled = ShareSerializer()
    baselines = BaselineSerializer(many=True)


class LengthBiasSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    odds_ratio_per_ratio_point = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    odds_ratio_per_reference_step = serializers.FloatField(allow_null=True)
    problem = serializers.CharField(allow_blank=True, help_text="why it could not be estimated")


class OtherJudgeSerializer(serializers.Serializer):
    judge_id = serializers.CharField()
    model = serializers.CharField()
    n = serializers.IntegerField()
    agreement = serializers.FloatField(allow_null=True)
    cohen_kappa = serializers.FloatField(allow_null=True)


class CostSerializer(serializers.Serializer):
    n_jobs = serializers.IntegerField()
    n_answered = serializers.IntegerField()
    prompt_tokens_per_judgment = serializers.FloatField(allow_null=True)
    completion_tokens_per_judgment = serializers.FloatField(allow_null=True)
    latency_per_judgment_s = serializers.FloatField(allow_null=True)
    usd_per_judgment = serializers.FloatField(allow_null=True)


class MeanDifferenceSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True, help_text="mean of judge - human label (weighted)")
    ci_low = serializers.FloatField(allow_null=True, help_text="95 % normal interval")
    ci_high = serializers.FloatField(allow_null=True)
    std_error = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="labelled items with the judge's verdict")
    weighted = serializers.BooleanField()
    undefined = serializers.CharField(allow_blank=True)


class BiasClassSerializer(serializers.Serializer):
    k = serializers.IntegerField(help_text="items the judge labels the other way")
    n = serializers.IntegerField(help_text="items of this human class")
    rate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True, help_text="Wilson (weighted: normal)")
    ci_high = serializers.FloatField(allow_null=True)
    contribution = serializers.FloatField(allow_null=True, help_text="signed contribution to the bias")
    weighted = serializers.BooleanField()


class TopicBiasSerializer(serializers.Serializer):
    topic = serializers.CharField()
    n = serializers.IntegerField()
    bias = MeanDifferenceSerializer(allow_null=True, help_text="null below MIN_TOPIC_LABELS items")
    undefined = serializers.CharField(allow_blank=True)


class CalibrationBiasSerializer(serializers.Serializer):
    """The judge's bias (judge - human) on the calibration samples (issue #20)."""

    bias = MeanDifferenceSerializer()
    missed_failures = BiasClassSerializer(help_text="humans: a failure; the judge passes it")
    false_alarms = BiasClassSerializer(help_text="humans: none; the judge fails it")
    n_ties = serializers.IntegerField()
    ties_contribution = serializers.FloatField(allow_null=True)
    topics = TopicBiasSerializer(many=True)
    studies = serializers.ListField(child=serializers.CharField())
    n_generators = serializers.IntegerField()
    n_no_verdict = serializers.IntegerField(help_text="labelled items without the judge's verdict: left out")


class SkippedStudySerializer(GoldComparisonSerializer):
    """A study the judge judged without majority figures yet, with why (its gold figures may still show)."""

    study = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()


class ReportCardSerializer(serializers.Serializer):
    """Shape of report_card.ReportCard.as_json() (docs/reference/statistics.md defines every figure)."""

    judge_id = serializers.CharField()
    model = serializers.CharField()
    is_demo_model = serializers.BooleanField()
    instrument = InstrumentSerializer()
    studies = StudyCardSerializer(many=True)
    studies_without_figures = SkippedStudySerializer(many=True)
    no_study_reason = serializers.CharField(allow_blank=True)
    length_bias = LengthBiasSerializer()
    other_judges = OtherJudgeSerializer(many=True)
    cost = CostSerializer()
    flips = ShareSerializer()
    calibration_bias = CalibrationBiasSerializer(allow_null=True)
    no_calibration_bias_reason = serializers.CharField(allow_blank=True)


class JudgeReportCardView(ComputedView):
    """A judge's report card: instrument failures, agreement with the human majority per study (with its
    Wilson intervals, Cohen's kappa, Gwet's AC1, the human leave-one-out band and trivial baselines on the
    same items) and with the adjudicated gold (beside the majority's own agreement with it), length bias (§D.5
    regression), agreement with the other judges, cost, latency and flips, and its bias against people on the
    calibration samples. docs/reference/statistics.md defines every figure."""

    serializer_class = ReportCardSerializer

    @extend_schema(responses=ReportCardSerializer, operation_id="judge_report_card")
    def get(self, request: Request, judge_id: str) -> Response:
        judge = Judge.objects.filter(judge_id=judge_id).first()
        if judge is None:
            raise NotFound(f"no judge with judge_id {judge_id!r}")
        return Response(report_card(judge).as_json())
