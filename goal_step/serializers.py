"""The body of POST /api/jobs/ {"kind": "build_tasks", ...}: a goal-step task set to build (jobs.py)."""

from __future__ import annotations

from rest_framework import serializers

from h2e_site.bounds import model_range
from mining.models import Split, Topic

from .job_kinds import BUILD_TASKS
from .jobs import DEFAULT_TEST_SHARE
from .models import TaskSet
from .selection import SplitBy


class BuildTasksJobCreateSerializer(serializers.Serializer):
    """A new task set over the procedures of some splits (and topics), built by a build_tasks job."""

    kind = serializers.ChoiceField(choices=[(BUILD_TASKS, "build goal-step tasks")])
    name = serializers.SlugField(max_length=64, help_text="the task set's name (a new one)")
    seed = model_range(TaskSet, "seed").api_field(default=0)
    splits = serializers.ListField(
        child=serializers.ChoiceField(choices=Split.choices), default=[Split.BENCH], allow_empty=False
    )
    topics = serializers.ListField(
        child=serializers.CharField(), default=list, help_text="topic names (none: every topic)"
    )
    test_share = serializers.FloatField(default=DEFAULT_TEST_SHARE, min_value=0.01, max_value=0.99)
    split_by = serializers.ChoiceField(choices=SplitBy.choices, default=SplitBy.TEXT)

    def validate_name(self, value: str) -> str:
        if TaskSet.objects.filter(name=value).exists():
            raise serializers.ValidationError(f"a task set {value!r} exists already")
        return value

    def validate_topics(self, value: list[str]) -> list[int]:
        ids = dict(Topic.objects.filter(name__in=value).values_list("name", "pk"))
        unknown = [name for name in value if name not in ids]
        if unknown:
            raise serializers.ValidationError(f"no topic named {unknown[0]!r}")
        return [ids[name] for name in value]
