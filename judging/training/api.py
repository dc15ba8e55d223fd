"""POST /api/reward/: the reward service's endpoint (judging/training/service.py says what it computes).

A trainer sends `Authorization: Token <key>` of a staff user with the permission judging.request_reward.
Bounds (a batch's size, each text's length) are checked here, once, and refused with a 400 naming the field
(items.3.completion); a procedure id that does not exist is named the same way.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from h2e_site.api import MAX_ID, ObjectJSONParser
from h2e_site.bounds import INT32_MAX
from h2e_site.llm.config import ConfigError
from h2e_site.web import request_user
from mining.models import Procedure

from .models import GROUP_MAX, POLICY_MAX, RUN_NAME_MAX, TrainingRun
from .reward_config import COMPONENTS, RewardConfig, load_reward_config
from .service import ProcedureText, RewardBatch, RewardItem, rewards_for

REWARD_PERMISSION = "judging.request_reward"
MAX_ITEMS = 1024
MAX_COMPLETION_CHARS = 32_000
MAX_GOAL_CHARS = 2_000
MAX_STEP_CHARS = 2_000
MAX_STEPS = 100
MAX_RESOURCES = 100
MAX_BODY_CHARS = 48_000_000  # 1,024 items of 32,000 characters, with room for JSON's escapes


class CanRequestReward(permissions.BasePermission):
    message = "The reward service needs the permission 'judging.request_reward' (Can ask for rewards)."

    def has_permission(self, request: Any, view: Any) -> bool:
        return bool(request.user and request.user.has_perm(REWARD_PERMISSION))


class RewardBodyParser(ObjectJSONParser):
    """A batch of completions is larger than other bodies: measured against its own bound."""

    max_chars = MAX_BODY_CHARS


class InlineProcedureSerializer(serializers.Serializer):
    goal = serializers.CharField(max_length=MAX_GOAL_CHARS)
    resources = serializers.ListField(
        child=serializers.CharField(max_length=MAX_STEP_CHARS), max_length=MAX_RESOURCES, default=list
    )
    steps = serializers.ListField(
        child=serializers.CharField(max_length=MAX_STEP_CHARS), min_length=1, max_length=MAX_STEPS
    )


class RewardItemSerializer(serializers.Serializer):
    procedure_id = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    procedure = InlineProcedureSerializer(required=False, help_text="goal, resources, reference steps (L1)")
    completion = serializers.CharField(
        max_length=MAX_COMPLETION_CHARS, allow_blank=True, trim_whitespace=False
    )
    run = serializers.CharField(max_length=RUN_NAME_MAX, required=False)
    step = serializers.IntegerField(min_value=0, max_value=INT32_MAX, required=False)
    group = serializers.CharField(max_length=GROUP_MAX, required=False, allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("procedure_id" in attrs) == ("procedure" in attrs):
            raise ValidationError({"procedure_id": ["Give procedure_id or procedure (inline), exactly one."]})
        return attrs


class RewardRequestSerializer(serializers.Serializer):
    reward = serializers.CharField(
        max_length=200, required=False, help_text="a reward config: the stem of configs/rewards/<name>.yaml"
    )
    run = serializers.CharField(max_length=RUN_NAME_MAX, required=False, help_text="every item's run")
    policy = serializers.CharField(max_length=POLICY_MAX, required=False, allow_blank=True)
    components = serializers.ListField(
        child=serializers.ChoiceField(choices=COMPONENTS), min_length=1, max_length=3, required=False
    )
    items = RewardItemSerializer(many=True, min_length=1, max_length=MAX_ITEMS)


class ItemRewardSerializer(serializers.Serializer):
    how2score = serializers.IntegerField(allow_null=True, help_text="1: no critical failure; 0: some")
    how2score_reason = serializers.CharField()
    format = serializers.IntegerField(allow_null=True)
    format_reason = serializers.CharField()
    n_steps = serializers.IntegerField(allow_null=True)
    length = serializers.FloatField(allow_null=True)
    length_ratio = serializers.FloatField(allow_null=True)
    gen_tokens = serializers.IntegerField(allow_null=True)
    ref_tokens = serializers.IntegerField(allow_null=True)
    total = serializers.FloatField(allow_null=True)
    judge = serializers.CharField()
    from_store = serializers.BooleanField()
    error = serializers.CharField()


class RewardResponseSerializer(serializers.Serializer):
    reward = serializers.CharField()
    judge = serializers.CharField()
    items = ItemRewardSerializer(many=True)


class RewardView(APIView):
    """How2Score, the step format and the length reward for a batch of completions (paper §6, §E.4)."""

    # A token first: a trainer without credentials is told 401 and how to authenticate (WWW-Authenticate).
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [permissions.IsAdminUser, CanRequestReward]
    parser_classes = [RewardBodyParser]

    @extend_schema(request=RewardRequestSerializer, responses={200: RewardResponseSerializer})
    def post(self, request: Request) -> Response:
        body = RewardRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        config = _config(data)
        batch = RewardBatch(
            config=config,
            items=_items(data),
            components=tuple(name for name in COMPONENTS if name in data.get("components", COMPONENTS)),
            policy=data.get("policy", ""),
            user=request_user(request),
        )
        rewards = rewards_for(batch)
        judge = next((reward.judge for reward in rewards if reward.judge), "")
        return Response({"reward": config.name, "judge": judge, "items": [r.as_json() for r in rewards]})


def _config(data: dict[str, Any]) -> RewardConfig:
    """The reward config asked for; a run keeps the one it started with (its curves would mix otherwise)."""
    runs = {data.get("run")} | {item.get("run") for item in data["items"]}
    used = dict(TrainingRun.objects.filter(name__in=runs - {None}).values_list("name", "reward_name"))
    name = data.get("reward") or next(iter(sorted(set(used.values()))), settings.H2E_DEFAULT_REWARD)
    clash = sorted(run for run, reward in used.items() if reward != name)
    if clash:
        raise ValidationError({"reward": [f"run {clash[0]!r} uses reward {used[clash[0]]!r}, not {name!r}"]})
    try:
        return load_reward_config(name)
    except (ConfigError, OSError) as exc:
        raise ValidationError({"reward": [str(exc)]}) from exc


def _items(data: dict[str, Any]) -> list[RewardItem]:
    ids = {item["procedure_id"] for item in data["items"] if "procedure_id" in item}
    found = {p.pk: p for p in Procedure.objects.filter(pk__in=ids).only("goal", "resources", "steps")}
    missing = {
        str(index): {"procedure_id": [f"no procedure with id {item['procedure_id']}"]}
        for index, item in enumerate(data["items"])
        if "procedure_id" in item and item["procedure_id"] not in found
    }
    if missing:  # shaped as DRF shapes a list's errors: {"items": {"3": {"field": [...]}}}
        raise ValidationError({"items": missing})
    return [_item(item, data.get("run", ""), found) for item in data["items"]]


def _item(item: dict[str, Any], run: str, found: dict[int, Procedure]) -> RewardItem:
    if "procedure_id" in item:
        row = found[item["procedure_id"]]
        procedure = ProcedureText(
            goal=row.goal,
            resources=tuple(str(r) for r in row.resources or []),
            steps=tuple(str(s) for s in row.steps or []),
            procedure_pk=row.pk,
        )
    else:
        inline = item["procedure"]
        procedure = ProcedureText(inline["goal"], tuple(inline["resources"]), tuple(inline["steps"]))
    return RewardItem(
        procedure=procedure,
        completion=item["completion"],
        run=item.get("run", run),
        step=item.get("step"),
        group=item.get("group", ""),
    )
