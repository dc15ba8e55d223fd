"""REST API (DRF) of the annotation side, for staff: each study kind's own endpoints (its `api_urls`: a
study's agreement, annotation/kinds/critical_failures/api.py and
annotation/kinds/step_types/agreement_api.py); a judge's
report card; the failure browser's list of judge and human critical failures; calibration.

GET /api/judges/<judge_id>/report-card/
GET /api/failures/?topic=&generator=&judge=&study=&source=&q=&cursor=&counts=
GET /api/leaderboard/calibrated/?judge=      the human-calibrated How2Score per generator x judge (#20)
GET /api/calibration/plan/?judge=&generator=&scope=&half_width_pp=&hourly_rate=...   the budget planner
POST /api/studies/<slug>/calibration-rounds/    {size, design?, judge_ids?, seed?}: the next round
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import failures
from annotation.base.models import Study
from annotation.base.registry import KINDS
from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration import planner
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.calibration.cache import calibrated_board
from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_create
from annotation.kinds.critical_failures.models import CalibrationDesign, CalibrationRound
from annotation.kinds.critical_failures.report_card import report_card
from annotation.kinds.step_types.classify_serializers import ShareSerializer
from h2e_site.api import ObjectJSONParser, QueryBooleanField, StrictFormSerializer, query_params
from h2e_site.api_views import ComputedView
from h2e_site.bounds import SEED
from judging.api import JudgeQuerySerializer
from judging.models import Judge


class FailureSerializer(serializers.Serializer):
    """A critical failure from a judge (judgment set) or a human annotator (annotation and study set)."""

    id = serializers.CharField(help_text="judge-<id> or human-<id>")
    source = serializers.ChoiceField(choices=["judge", "human"])
    generation = serializers.IntegerField()
    judgment = serializers.IntegerField(allow_null=True)
    annotation = serializers.IntegerField(allow_null=True)
    order = serializers.IntegerField()
    description = serializers.CharField()
    L1_steps = serializers.JSONField()
    L2_steps = serializers.JSONField()
    topic = serializers.CharField(allow_null=True)
    generator_id = serializers.CharField()
    generator_model = serializers.CharField()
    source_example_id = serializers.CharField()
    goal = serializers.CharField()
    judge_id = serializers.CharField(allow_null=True)
    judge_model = serializers.CharField(allow_null=True)
    study = serializers.CharField(allow_null=True)


class FailureTopicCountSerializer(serializers.Serializer):
    topic = serializers.CharField()
    judge = serializers.IntegerField()
    human = serializers.IntegerField()
    total = serializers.IntegerField()
    at_least = serializers.BooleanField(
        help_text="a text search matching more than 5,000 judges' failures: the judge count is a lower bound"
    )


class FailurePageSerializer(serializers.Serializer):
    results = FailureSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="pass as ?cursor= for the next page")
    next = serializers.CharField(allow_null=True, help_text="the next page's URL")
    counts_by_topic = FailureTopicCountSerializer(many=True, required=False, help_text="with ?counts=true")


def _name(help_text: str) -> serializers.CharField:
    return serializers.CharField(required=False, max_length=200, help_text=help_text)


class FailureQuerySerializer(serializers.Serializer):
    topic = _name("topic name")
    generator = _name("generator_id")
    judge = _name("judge_id (judges' failures only)")
    study = _name("study slug (human failures only)")
    source = serializers.ChoiceField(choices=["judge", "human"], required=False, help_text="absent: both")
    q = _name("text search (PostgreSQL: full text, websearch syntax; else substring)")
    pattern = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="a failure pattern's id: its failures"
    )
    cursor = serializers.RegexField(
        r"\A\d{1,18}\.[jh]\.\d{1,18}\.\d{1,9}\Z", required=False, help_text="next_cursor of the previous page"
    )
    counts = QueryBooleanField(required=False, default=False, help_text="also return counts_by_topic")


class FailureListView(ComputedView):
    """Critical failures from judges and human annotators, newest generation first, then judge before
    human, then judgment/annotation, then order; keyset-paginated (50 a page) by an opaque cursor."""

    serializer_class = FailurePageSerializer

    @extend_schema(parameters=[FailureQuerySerializer], responses=FailurePageSerializer)
    def get(self, request: Request) -> Response:
        params = query_params(request, FailureQuerySerializer)
        query = failures.FailureQuery.from_params(params)
        token = params.get("cursor", "")
        try:
            cursor = failures.Cursor.decode(token) if token else None
        except ValueError as exc:
            return Response({"cursor": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        choices = failures.filter_choices_for(query)
        problems = query.problems(choices)
        if problems:  # a filter naming no topic, generator, judge or study: nothing to list
            return Response({k: [v] for k, v in problems.items()}, status=status.HTTP_404_NOT_FOUND)
        filters = failures.failure_filters_resolve(query, choices)
        page = failures.failure_page(filters=filters, cursor=cursor)
        data: dict[str, Any] = {
            "results": [row.as_json() for row in page.rows],
            "next_cursor": page.next_cursor,
            "next": _next_url(request, page.next_cursor),
        }
        if params["counts"]:
            data["counts_by_topic"] = [
                {
                    "topic": c.topic,
                    "judge": c.judge,
                    "human": c.human,
                    "total": c.total,
                    "at_least": c.at_least,
                }
                for c in failures.failure_counts_by_topic(filters=filters)
            ]
        return Response(data)


def _bounded(
    name: str, help_text: str, *, integer: bool = False, required: bool = False
) -> serializers.Field:
    low, high = planner.BOUNDS[name]
    messages = planner.bound_messages(low, high)
    if integer:
        return serializers.IntegerField(
            min_value=int(low), max_value=int(high), required=required, help_text=help_text,
            error_messages=messages,
        )  # fmt: skip
    return serializers.FloatField(
        min_value=low, max_value=high, required=required, help_text=help_text, error_messages=messages
    )


class PlanQuerySerializer(serializers.Serializer):
    judge = serializers.CharField(max_length=200, help_text="judge_id")
    generator = serializers.CharField(max_length=200, help_text="generator_id")
    scope = serializers.ChoiceField(
        choices=list(planner.SCOPES), required=False, default="generator", help_text="what the target is for"
    )
    other_generator = _name("the second generator_id (scope=difference)")
    half_width_pp = _bounded("half_width_pp", "target 95 % half-width, percentage points", required=True)
    hourly_rate = _bounded("hourly_rate", "annotator pay per hour (currency)", required=True)
    currency = serializers.ChoiceField(choices=list(planner.CURRENCIES), required=False, default="GBP")
    fee_percent = _bounded("fee_percent", "platform service fee on the pay, %; absent: not included")
    k = _bounded("k", "annotators per item; absent: the calibration study's", integer=True)
    items_per_participant = _bounded("items_per_participant", "absent: the calibration study's", integer=True)
    human_share_pp = _bounded("human_share_pp", "assumed human share, % (where < 2 labels); absent: 49")
    agreement_pp = _bounded(
        "agreement_pp",
        "assumed judge agreement with the human majority, %; absent: derived for each part from the human "
        "share and the judge's share, within the range they allow",
    )


class PlanView(ComputedView):
    """The budget planner (annotation/kinds/critical_failures/calibration/planner.py;
    docs/reference/statistics.md, "The budget planner"): the
    human labels, annotations, participants, minutes and cost to reach a target half-width, the minimum
    detectable differences at the labels collected, and the paper's setting as a fixed example.

    Rules the schema cannot state: a `judge` or `generator` that does not exist is a 404; a 400 naming the
    parameter for a judge that has not judged the generator, a difference (`other_generator`) that is missing
    or is the first generator, and an assumed agreement (`agreement_pp`) the shares cannot produce."""

    @extend_schema(parameters=[PlanQuerySerializer], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        params = query_params(request, PlanQuerySerializer)
        try:
            result = planner.plan(planner.plan_input(params))
        except planner.PlanError as error:
            if error.missing:
                return Response({error.field: [error.message]}, status=status.HTTP_404_NOT_FOUND)
            raise ValidationError({error.field: [error.message]}) from error
        return Response({**result.as_json(), "paper_example": planner.paper_example()})


def _next_url(request: Request, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    params = request.query_params.copy()
    params["cursor"] = cursor
    return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")


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


class CalibratedScoreSerializer(serializers.Serializer):
    """h2e_site.stats.calibration.CalibratedScore: shares in [0, 1]; null with the reason in `undefined`."""

    estimate = serializers.FloatField(allow_null=True, help_text="PPI++ estimate of the human-majority share")
    ci_low = serializers.FloatField(allow_null=True, help_text="95 % normal interval (not clipped to [0, 1])")
    ci_high = serializers.FloatField(allow_null=True)
    std_error = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="human-labelled items")
    N = serializers.IntegerField(help_text="examples with a judge label (the sample's frame)")
    lam = serializers.FloatField(
        allow_null=True, help_text="power-tuning weight in [0, 1] (null: one per design stratum)"
    )
    effective_n = serializers.FloatField(allow_null=True, help_text="human labels the interval is worth")
    human_only = serializers.FloatField(allow_null=True)
    human_ci_low = serializers.FloatField(allow_null=True, help_text="Wilson (weighted: normal)")
    human_ci_high = serializers.FloatField(allow_null=True)
    weighted = serializers.BooleanField(help_text="inverse-probability weights (unequal probabilities)")
    design_strata = serializers.IntegerField(
        help_text="> 0: estimated over that many design strata (distinct inclusion probabilities), each "
        "unweighted with its own lam; 0: weighted by 1 / pi, or a uniform sample"
    )
    undefined = serializers.CharField(allow_blank=True)


class StratifiedScoreSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    std_error = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    N = serializers.IntegerField()
    effective_n = serializers.FloatField(allow_null=True)
    strata = serializers.ListField(
        child=serializers.CharField(),
        help_text='topics, and "other topics" (merged into the largest topic, as "<topic> + other topics", '
        "where it has fewer than 2 human labels)",
    )
    undefined = serializers.CharField(allow_blank=True)


class CalibratedTopicSerializer(serializers.Serializer):
    topic = serializers.CharField()
    n_labelled = serializers.IntegerField()
    n_examples = serializers.IntegerField()
    score = CalibratedScoreSerializer(allow_null=True, help_text="null below MIN_TOPIC_LABELS labels")
    undefined = serializers.CharField(allow_blank=True)


class JudgeOnlySerializer(serializers.Serializer):
    score = serializers.FloatField(allow_null=True, help_text="the leaderboard's How2Score, as a share")
    ci_low = serializers.FloatField(allow_null=True, help_text="95 % Wilson")
    ci_high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="scored examples")


class CalibratedLineSerializer(serializers.Serializer):
    generator_id = serializers.CharField()
    generator_model = serializers.CharField()
    judge_id = serializers.CharField()
    judge_model = serializers.CharField()
    study = serializers.CharField(allow_null=True, help_text="the calibration study used")
    calibrated = CalibratedScoreSerializer()
    stratified = StratifiedScoreSerializer(allow_null=True)
    topics = CalibratedTopicSerializer(many=True)
    judge_only = JudgeOnlySerializer()
    n_pending = serializers.IntegerField(help_text="drawn items still collecting annotations")
    n_ties = serializers.IntegerField(help_text="items whose human majority ties (counted as 0.5)")
    n_imputed = serializers.IntegerField(help_text="examples without a judge verdict (imputed)")
    n_gold = serializers.IntegerField(
        help_text="labelled items whose human label is their adjudicated gold, not the majority"
    )
    reason = serializers.CharField(allow_blank=True, help_text="why the line has no calibrated score")


class UnusedStudySerializer(serializers.Serializer):
    study = serializers.CharField(source="slug")
    title = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()


class CalibratedLeaderboardSerializer(serializers.Serializer):
    min_topic_labels = serializers.IntegerField(help_text="a topic's own estimate needs this many labels")
    lines = CalibratedLineSerializer(many=True)
    unused_studies = UnusedStudySerializer(many=True)


class CalibratedLeaderboardView(ComputedView):
    """The human-calibrated How2Score (PPI++) per generator x judge, with the judge-only and human-only
    scores, per topic and topic-stratified; every judge without ?judge=. Raw values (not clipped)."""

    serializer_class = CalibratedLeaderboardSerializer

    @extend_schema(parameters=[JudgeQuerySerializer], responses=CalibratedLeaderboardSerializer)
    def get(self, request: Request) -> Response:
        judge_ids = query_params(request, JudgeQuerySerializer).get("judge", [])
        known = set(Judge.objects.filter(judge_id__in=judge_ids).values_list("judge_id", flat=True))
        unknown = [j for j in judge_ids if j not in known]
        if unknown:
            raise NotFound(f"judge: no judge with judge_id {', '.join(map(repr, unknown))}")
        board = calibrated_board(judge_ids)
        data = {
            "min_topic_labels": calibration.MIN_TOPIC_LABELS,
            "lines": [line.as_json() for line in board.lines],
            "unused_studies": [{"study": u.slug, "title": u.title, "reason": u.reason} for u in board.unused],
        }
        return Response(data)


class CalibrationRoundRequestSerializer(StrictFormSerializer):
    size = serializers.IntegerField(
        min_value=1, max_value=1_000_000, help_text="examples the round draws (n)"
    )
    design = serializers.ChoiceField(
        choices=CalibrationDesign.choices,
        required=False,
        help_text="absent: disagreement when the study has judges, else uniform",
    )
    judge_ids = serializers.ListField(
        # \S: an id is not blank once trimmed (the schema says so, as the field refuses it)
        child=serializers.CharField(min_length=1, max_length=200, validators=[RegexValidator(r"\S")]),
        required=False,
        max_length=100,
        help_text="judge_id of each judge whose verdicts give the uncertainty; absent: the study's judges",
    )
    seed = SEED.api_field(required=False, help_text="absent: a random seed (stored with the round)")


class CalibrationRoundSerializer(serializers.Serializer):
    study = serializers.CharField(source="study.slug")
    number = serializers.IntegerField()
    design = serializers.CharField()
    size = serializers.IntegerField(help_text="examples drawn (some may have been drawn in earlier rounds)")
    new_items = serializers.IntegerField(help_text="items this round added to the study")
    seed = serializers.IntegerField()
    judge_ids = serializers.SerializerMethodField(
        help_text="judge_id of the judges that gave the uncertainty"
    )
    frame_size = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_judge_ids(self, calibration_round: CalibrationRound) -> list[str]:
        names = dict(Judge.objects.filter(pk__in=calibration_round.judge_ids).values_list("pk", "judge_id"))
        return [names.get(int(pk), str(pk)) for pk in calibration_round.judge_ids]

    def get_frame_size(self, calibration_round: CalibrationRound) -> int:
        return calibration_round.draws.count()


class RoundJobSerializer(serializers.Serializer):
    job = serializers.IntegerField(help_text="the calibration_round job drawing the round (/api/jobs/<id>/)")
    status = serializers.CharField()


class CalibrationRoundView(ComputedView):
    """Draw the next round of a calibration study: every frame generation's inclusion probability from the
    judges' verdicts only, a systematic PPS draw, and an item for each generation drawn that the study does
    not have yet (annotation/kinds/critical_failures/calibration/sample.py;
    docs/guides/researcher/calibration.md defines the
    designs). A frame of more than 10,000 examples is drawn by a calibration_round job: 202 with the job
    (which needs the 'add job' permission, else 403); a smaller one in the request: 201 with the round."""

    serializer_class = CalibrationRoundSerializer
    parser_classes = [ObjectJSONParser]  # a JSON object: a list of judges has no unambiguous form encoding

    @extend_schema(
        request=CalibrationRoundRequestSerializer,
        responses={201: CalibrationRoundSerializer, 202: RoundJobSerializer},
        operation_id="study_calibration_round_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        body = CalibrationRoundRequestSerializer(data=request.data)  # the body first: a 400 names it
        body.is_valid(raise_exception=True)
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise NotFound(f"no study {slug!r}")
        data = body.validated_data
        judges = _judge_pks(data["judge_ids"]) if "judge_ids" in data else None
        round_request = calibration_sample.RoundRequest(
            data["size"], data.get("design"), judges, data.get("seed")
        )
        try:
            if calibration_sample.round_in_job(study):
                user = request.user
                job = calibration_round_job_create(
                    study=study, request=round_request, created_by=user if isinstance(user, User) else None
                )
                return Response({"job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)
            drawn = calibration_sample.next_round(study=study, request=round_request)
        except DjangoValidationError as refused:
            raise ValidationError(refused.message_dict) from None
        return Response(self.get_serializer(drawn).data, status=status.HTTP_201_CREATED)


def _judge_pks(values: list[str]) -> list[int]:
    """The judges named by judge_id (or database id); a 400 naming judge_ids for one that is not there."""
    by_name = dict(Judge.objects.filter(judge_id__in=values).values_list("judge_id", "pk"))
    numbers = [int(v) for v in values if v.isascii() and v.isdigit() and v not in by_name and len(v) < 19]
    by_pk = set(Judge.objects.filter(pk__in=numbers).values_list("pk", flat=True))
    pks, missing = [], []
    for value in values:
        if value in by_name:
            pks.append(by_name[value])
        elif value.isascii() and value.isdigit() and len(value) < 19 and int(value) in by_pk:
            pks.append(int(value))
        else:
            missing.append(value)
    if missing:
        raise ValidationError({"judge_ids": [f"no judge with judge_id {', '.join(map(repr, missing))}"]})
    return pks


urlpatterns = [
    path("judges/<str:judge_id>/report-card/", JudgeReportCardView.as_view(), name="judge-report-card-api"),
    # Each kind's own endpoints (its `api_urls`): its agreement (/api/agreement/, /api/agreement/step-types/).
    *(pattern for spec in KINDS.values() for pattern in spec.api_urls()),
]
# Mounted by h2e_site/urls.py under the "api" namespace: /api/failures/.
api_urlpatterns = [
    path("failures/", FailureListView.as_view(), name="failures"),
    path("leaderboard/calibrated/", CalibratedLeaderboardView.as_view(), name="calibrated-leaderboard"),
    path("calibration/plan/", PlanView.as_view(), name="calibration-plan"),
    path(
        "studies/<slug:slug>/calibration-rounds/",
        CalibrationRoundView.as_view(),
        name="study-calibration-rounds",
    ),
]
