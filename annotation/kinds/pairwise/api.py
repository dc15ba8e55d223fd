"""REST API (DRF, staff) of a pairwise study: its figures as JSON (annotation/kinds/pairwise/figures.py).

GET /api/studies/<slug>/pairwise/    the figures of the study's agreement page

Mounted through the pairwise kind's `api_urls` (annotation/kinds/pairwise/urls.py).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.beyond_majority import beyond_majority_json, question_estimates
from annotation.base.dawid_skene_api import DawidSkeneSerializer
from annotation.base.models import Study
from annotation.kinds.pairwise.figures import figures_json, study_figures
from annotation.kinds.pairwise.questions import outcome_question
from h2e_site.api_views import ComputedView

KIND = "pairwise"


class PairwiseShareSerializer(serializers.Serializer):
    """k of n with its rate and 95 % Wilson interval."""

    k = serializers.IntegerField()
    n = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="k / n; null when n is 0")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


class PairwiseCoefficientSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="null: undefined, with the reason")
    n = serializers.IntegerField(help_text="items it rests on")
    undefined = serializers.CharField(allow_blank=True)


class PairwiseStrengthSerializer(serializers.Serializer):
    generator = serializers.CharField(help_text="generator_id")
    strength = serializers.FloatField(help_text="Bradley-Terry log-strength (mean 0 over the generators)")
    rank = serializers.IntegerField(help_text="1 = strongest")
    low = serializers.FloatField(allow_null=True, help_text="95 % bootstrap interval of the strength")
    high = serializers.FloatField(allow_null=True)
    rank_low = serializers.FloatField(allow_null=True, help_text="95 % bootstrap interval of the rank")
    rank_high = serializers.FloatField(allow_null=True)


class PairwiseRankingSerializer(serializers.Serializer):
    n_items = serializers.IntegerField()
    n_comparisons = serializers.IntegerField()
    samples = serializers.IntegerField(help_text="bootstrap resamples that connected every generator")
    undefined = serializers.CharField(allow_blank=True)
    strengths = PairwiseStrengthSerializer(many=True, help_text="strongest first; empty when undefined")


class PairwisePositionBiasSerializer(serializers.Serializer):
    left = PairwiseShareSerializer(help_text="decisive answers that chose the left L2 (1/2: no bias)")
    p_value = serializers.FloatField(allow_null=True, help_text="exact two-sided binomial test against 1/2")
    ties = serializers.IntegerField()


class PairwiseHumansSerializer(serializers.Serializer):
    n_items = serializers.IntegerField()
    n_answers = serializers.IntegerField()
    n_majorities = serializers.IntegerField(help_text="items with a strict human majority")
    ranking = PairwiseRankingSerializer()
    alpha = PairwiseCoefficientSerializer(help_text="Krippendorff's nominal alpha over the four outcomes")
    position_bias = PairwisePositionBiasSerializer()


class PairwiseJudgeSerializer(serializers.Serializer):
    judge_id = serializers.CharField()
    n_answers = serializers.IntegerField()
    ranking = PairwiseRankingSerializer()
    agreement = PairwiseShareSerializer(help_text="answers (each order) equal to the human majority")
    agreement_consistent = PairwiseShareSerializer(
        help_text="items whose two orders agree: equal to the majority"
    )
    kappa = PairwiseCoefficientSerializer(help_text="Cohen's kappa, judge answer vs human majority")
    position_bias = PairwisePositionBiasSerializer()
    flip_rate = PairwiseShareSerializer(help_text="items answered in both orders whose verdict changed")
    one_order = serializers.IntegerField(help_text="items answered in one order only")


class PairwiseTauSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n_generators = serializers.IntegerField()
    samples = serializers.IntegerField()
    undefined = serializers.CharField(allow_blank=True)


class PairwisePointwiseSerializer(serializers.Serializer):
    judge_id = serializers.CharField(help_text="the pointwise (How2Score) judge")
    agreement = PairwiseShareSerializer(
        help_text="decisive human answers agreeing with the pointwise preference"
    )
    pairwise_ties = serializers.IntegerField()
    both_pass = serializers.IntegerField()
    both_fail = serializers.IntegerField()
    missing = serializers.IntegerField()
    tau = PairwiseTauSerializer(help_text="Bradley-Terry (humans) vs How2Score ranking of the generators")


class PairwiseFiguresSerializer(serializers.Serializer):
    study = serializers.SlugField()
    n_pairs = serializers.IntegerField()
    humans = PairwiseHumansSerializer()
    judges = PairwiseJudgeSerializer(many=True, help_text="the study's LLM twin: pairwise judges")
    pointwise = PairwisePointwiseSerializer(many=True)
    dawid_skene = DawidSkeneSerializer(many=True, help_text="Dawid-Skene beside the majority on the outcomes")


class PairwiseFiguresView(ComputedView):
    """A pairwise study's figures: the humans' Bradley-Terry ranking of the generators (bootstrap
    intervals), their agreement and position bias; each pairwise judge's ranking, agreement with the human
    majority, position bias and flip rate; and, for each pointwise judge, the agreement of the human pairwise
    order with its How2Score order and Kendall's tau between the two rankings. Attention checks left out."""

    serializer_class = PairwiseFiguresSerializer

    @extend_schema(responses=PairwiseFiguresSerializer, operation_id="pairwise_study_figures")
    def get(self, request: Request, slug: str) -> Response:
        study = Study.objects.filter(slug=slug, kind=KIND).first()
        if study is None:
            raise NotFound(f"no pairwise study {slug!r}")
        estimates = beyond_majority_json(question_estimates([outcome_question(study)]))
        return Response({**figures_json(study_figures(study)), "dawid_skene": estimates})
