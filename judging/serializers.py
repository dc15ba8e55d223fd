"""DRF serializers of the read API: plain field mapping, no business logic."""

from __future__ import annotations

from rest_framework import serializers

from mining.models import Procedure, Split

from .models import CriticalFailure, Generation, Job, Judgment


class ProcedureSerializer(serializers.ModelSerializer):
    topic = serializers.CharField(source="topic.name", default=None, read_only=True, allow_null=True)

    class Meta:
        model = Procedure
        fields = [
            "id",
            "source_example_id",
            "topic",
            "split",
            "goal",
            "resources",
            "steps",
            "url",
            "source_text",
            "created_at",
        ]


class GenerationSerializer(serializers.ModelSerializer):
    generator_id = serializers.CharField(source="generator.generator_id", read_only=True)
    generator_model = serializers.CharField(source="generator.model", read_only=True)
    source_example_id = serializers.CharField(source="procedure.source_example_id", read_only=True)
    topic = serializers.CharField(
        source="procedure.topic.name", default=None, read_only=True, allow_null=True
    )
    goal = serializers.CharField(source="procedure.goal", read_only=True)

    class Meta:
        model = Generation
        fields = [
            "id",
            "generator_id",
            "generator_model",
            "procedure",
            "source_example_id",
            "topic",
            "goal",
            "prompt",
            "model_completion",
            "predicted_steps",
            "n_tokens",
            "error",
            "created_at",
        ]


class CriticalFailureSerializer(serializers.ModelSerializer):
    """A critical failure with the h2e key names for its step links."""

    L1_steps = serializers.JSONField(source="l1_steps", read_only=True)
    L2_steps = serializers.JSONField(source="l2_steps", read_only=True)

    class Meta:
        model = CriticalFailure
        fields = ["order", "description", "L1_steps", "L2_steps"]


class JudgmentSerializer(serializers.ModelSerializer):
    judge_id = serializers.CharField(source="judge.judge_id", read_only=True)
    judge_model = serializers.CharField(source="judge.model", read_only=True)
    generator_id = serializers.CharField(source="generator.generator_id", read_only=True)
    source_example_id = serializers.CharField(source="generation.procedure.source_example_id", read_only=True)
    topic = serializers.CharField(source="topic.name", default=None, read_only=True, allow_null=True)
    critical_failures = CriticalFailureSerializer(source="failures", many=True, read_only=True)

    class Meta:
        model = Judgment
        fields = [
            "id",
            "judge_id",
            "judge_model",
            "generator_id",
            "generation",
            "source_example_id",
            "topic",
            "parse_failed",
            "has_failure",
            "n_failures",
            "reasoning",
            "raw_output",
            "error",
            "critical_failures",
            "created_at",
        ]


class JobSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    progress_percent = serializers.FloatField(read_only=True)
    is_finished = serializers.BooleanField(read_only=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "parameters",
            "total",
            "done",
            "failed",
            "progress_percent",
            "is_finished",
            "error",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "updated_at",
        ]


class LeaderboardRowSerializer(serializers.Serializer):
    """Shape of selectors.LeaderboardRow.as_json() (documents the schema; rows are plain dicts)."""

    generator_model = serializers.CharField()
    generator_id = serializers.CharField()
    judge_model = serializers.CharField()
    judge_id = serializers.CharField()
    how2score_percent = serializers.FloatField()
    strict_how2score_percent = serializers.FloatField()
    n_examples = serializers.IntegerField()
    n_with_failures = serializers.IntegerField()
    n_parse_failed = serializers.IntegerField()
    avg_failures_per_example = serializers.FloatField()


class TopicLeaderboardRowSerializer(LeaderboardRowSerializer):
    topic = serializers.CharField()


class ImportRequestSerializer(serializers.Serializer):
    """Multipart body of POST /api/imports/."""

    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    kind = serializers.ChoiceField(choices=[("bench", "bench files"), ("h2e", "h2e out_root archive")])
    split = serializers.ChoiceField(choices=Split.choices, default=Split.BENCH)
    skip_invalid = serializers.BooleanField(default=False)
