"""The calibration API (DRF, staff) of critical-failures studies: the calibrated leaderboard, the budget
planner and a calibration study's next round.

GET /api/leaderboard/calibrated/?judge=      the human-calibrated How2Score per generator x judge (#20)
GET /api/calibration/plan/?judge=&generator=&scope=&half_width_pp=&hourly_rate=...   the budget planner
POST /api/studies/<slug>/calibration-rounds/    {size, design?, judge_ids?, seed?}: the next round

Mounted in the "api" namespace through the kind's `api_routes` (annotation/kinds/critical_failures/urls.py).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration import planner
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.calibration.cache import calibrated_board
from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_create
from annotation.kinds.critical_failures.models import CalibrationDesign, CalibrationRound
from h2e_site.api import ObjectJSONParser, StrictFormSerializer, query_params
from h2e_site.api_views import ComputedView
from h2e_site.bounds import SEED
from judging.api import JudgeQuerySerializer
from judging.models import Judge


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
    other_generator = serializers.CharField(
        required=False, max_length=200, help_text="the second generator_id (scope=difference)"
    )
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
