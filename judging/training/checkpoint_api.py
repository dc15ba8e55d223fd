"""GET /api/training/runs/<name>/checkpoints/ (staff): the checkpoints page's table as JSON
(judging/training/checkpoints.py says what each figure is). ?judge= and ?external= choose the judges by
judge_id, as on the page; an unknown one is a 400 naming the field."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from h2e_site.api import query_params
from h2e_site.api_views import ComputedView

from ..models import Judge
from .checkpoints import checkpoint_table
from .models import TrainingRun


class CheckpointTableQuerySerializer(serializers.Serializer):
    judge = serializers.CharField(
        max_length=64, required=False, help_text="judge_id (default: the run's judge)"
    )
    external = serializers.CharField(max_length=64, required=False, help_text="judge_id of an external judge")


class JudgeRefSerializer(serializers.Serializer):
    judge_id = serializers.CharField()
    model = serializers.CharField()


class PairedDeltaSerializer(serializers.Serializer):
    n_shared = serializers.IntegerField(help_text="procedures both checkpoints have a scored verdict on")
    first_only = serializers.IntegerField(help_text="shared procedures only the first checkpoint passes")
    this_only = serializers.IntegerField(help_text="shared procedures only this checkpoint passes")
    p_value = serializers.FloatField(help_text="exact McNemar, two-sided")
    p_holm = serializers.FloatField(help_text="Holm-adjusted across the table's rows")
    separable = serializers.BooleanField(help_text="p_holm < 0.05")


class JudgeCellSerializer(serializers.Serializer):
    how2score_percent = serializers.FloatField(allow_null=True)
    how2score_ci_low = serializers.FloatField(allow_null=True, help_text="95 % Wilson interval")
    how2score_ci_high = serializers.FloatField(allow_null=True)
    n_examples = serializers.IntegerField()
    n_parse_failed = serializers.IntegerField()
    delta_points = serializers.FloatField(allow_null=True, help_text="How2Score - the first checkpoint's")
    test = PairedDeltaSerializer(allow_null=True)


class OODCellSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True, help_text="score - the first checkpoint's score")


class CheckpointRowSerializer(serializers.Serializer):
    step = serializers.IntegerField()
    label = serializers.CharField()
    generator_id = serializers.CharField()
    generator_model = serializers.CharField()
    judge = JudgeCellSerializer()
    external = JudgeCellSerializer(allow_null=True)
    n_generations = serializers.IntegerField()
    avg_tokens = serializers.FloatField(allow_null=True, help_text="mean o200k_base tokens of the L2")
    gen_ref_ratio_percent = serializers.FloatField(allow_null=True, help_text="mean 100 * |gen| / |ref|")
    ood = OODCellSerializer(many=True)
    ood_mean_delta = serializers.FloatField(
        allow_null=True, help_text="Δ_OOD: mean Δ over the benchmarks, negated where lower is better"
    )
    ood_n = serializers.IntegerField(help_text="benchmarks Δ_OOD averages")


class BenchmarkSerializer(serializers.Serializer):
    name = serializers.CharField()
    higher_is_better = serializers.BooleanField()


class CheckpointTableSerializer(serializers.Serializer):
    run = serializers.CharField()
    judge = JudgeRefSerializer(allow_null=True)
    external = JudgeRefSerializer(allow_null=True)
    benchmarks = BenchmarkSerializer(many=True)
    checkpoints = CheckpointRowSerializer(many=True, help_text="in step order; the first is the base")


def _judge(data: dict[str, Any], name: str) -> Judge | None:
    judge_id = data.get(name, "").strip()
    if not judge_id:
        return None
    judge = Judge.objects.filter(judge_id=judge_id).first()
    if judge is None:
        raise ValidationError({name: [f"no judge has the judge_id {judge_id!r}"]})
    return judge


class CheckpointTableView(ComputedView):
    """A training run's checkpoints on the benchmark (paper Table 2): How2Score and Δ with the paired test,
    tokens, an external judge, OOD scores and Δ_OOD."""

    permission_classes = [permissions.IsAdminUser]
    serializer_class = CheckpointTableSerializer

    @extend_schema(parameters=[CheckpointTableQuerySerializer], responses={200: CheckpointTableSerializer})
    def get(self, request: Request, name: str) -> Response:
        query = query_params(request, CheckpointTableQuerySerializer)
        run = get_object_or_404(TrainingRun.objects.select_related("judge"), name=name)
        table = checkpoint_table(run, judge=_judge(query, "judge"), external=_judge(query, "external"))
        return Response(table.as_json())
