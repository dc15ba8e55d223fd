"""DRF serializers of the API: plain field mapping and request validation, no business logic."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from h2e_site.api import FormBooleanField, StrictFormSerializer
from h2e_site.bounds import model_range
from mining.models import Procedure, Split

from .generate_jobs import LIMIT
from .models import CriticalFailure, Generation, Generator, Judge, Judgment


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
            "critical_failures",
            "created_at",
        ]


class JobCreateSerializer(serializers.Serializer):
    """Body of POST /api/jobs/: a generate job (generator x procedures) or a judge job (judge x L2)."""

    kind = serializers.ChoiceField(choices=[("generate", "generate L2"), ("judge", "judge (How2Score)")])
    generator_id = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="generate: the generator to run (required); judge: judge this generator's generations",
    )
    judge_id = serializers.CharField(required=False, allow_null=True, help_text="judge: the judge (required)")
    split = serializers.ChoiceField(
        choices=Split.choices,
        required=False,
        allow_null=True,
        default=Split.BENCH,
        help_text="generate: procedures of this split (null: every split)",
    )
    limit = LIMIT.api_field(
        required=False, allow_null=True, help_text="generate: at most this many procedures"
    )
    procedure_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=model_range(Procedure, "id").high),
        required=False,
        allow_null=True,
        help_text="generate: only these procedures (ids)",
    )
    mode = serializers.ChoiceField(
        choices=[
            ("missing", "generations without a judgment by this judge"),
            (
                "parse_failed",
                "generations whose judgment is a parse failure, or that the judge could not judge "
                "(an API error)",
            ),
            ("replace", "all of them, replacing the judgments"),
        ],
        default="missing",
        help_text="judge: which generations",
    )
    generation_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=model_range(Generation, "id").high),
        required=False,
        allow_null=True,
        help_text="judge: only these generations (ids)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        generator_id, judge_id = attrs.get("generator_id"), attrs.get("judge_id")
        attrs["generator"] = _row(Generator, "generator_id", generator_id) if generator_id else None
        if attrs["kind"] == "generate":
            if attrs["generator"] is None:
                raise serializers.ValidationError({"generator_id": ["required for a generate job"]})
            return attrs
        if not judge_id:
            raise serializers.ValidationError({"judge_id": ["required for a judge job"]})
        attrs["judge"] = _row(Judge, "judge_id", judge_id)
        if attrs["generator"] is None and attrs.get("generation_ids") is None:
            raise serializers.ValidationError(
                {"generator_id": ["a judge job needs generator_id or generation_ids"]}
            )
        return attrs


def _row(model: type[Generator] | type[Judge], field: str, value: str) -> Any:
    row = model.objects.filter(**{field: value}).first()
    if row is None:
        raise serializers.ValidationError({field: [f"no {model._meta.verbose_name} with {field} {value!r}"]})
    return row


class PairedTestSerializer(serializers.Serializer):
    """Shape of paired.PairedTest.as_json()."""

    judge_id = serializers.CharField()
    generator_a = serializers.CharField()
    generator_b = serializers.CharField()
    n_shared = serializers.IntegerField(help_text="examples both generators were scored on by this judge")
    a_only = serializers.IntegerField(help_text="discordant: A has no critical failure, B has one")
    b_only = serializers.IntegerField(help_text="discordant: B has no critical failure, A has one")
    p_value = serializers.FloatField(help_text="exact McNemar test, two-sided")
    p_holm = serializers.FloatField(help_text="Holm-adjusted across every pair of this judge's generators")
    separable = serializers.BooleanField(help_text="p_holm < 0.05")


class JudgePairsSerializer(serializers.Serializer):
    """Shape of paired.JudgePairs.as_json()."""

    judge_id = serializers.CharField()
    n_pairs = serializers.IntegerField()
    n_separable = serializers.IntegerField()
    separability = serializers.FloatField(allow_null=True, help_text="n_separable / n_pairs")
    pairs = PairedTestSerializer(many=True)


class ScoreRowSerializer(serializers.Serializer):
    """Shape of selectors.LeaderboardRow.as_json(): How2Score of a generator x judge (documents the schema;
    rows are plain dicts)."""

    generator_model = serializers.CharField()
    generator_id = serializers.CharField()
    judge_model = serializers.CharField()
    judge_id = serializers.CharField()
    how2score_percent = serializers.FloatField()
    how2score_ci_low = serializers.FloatField(
        allow_null=True, help_text="95 % Wilson score interval of How2Score, low end (null: no example)"
    )
    how2score_ci_high = serializers.FloatField(allow_null=True, help_text="... and high end")
    strict_how2score_percent = serializers.FloatField()
    strict_how2score_ci_low = serializers.FloatField(
        allow_null=True, help_text="95 % Wilson score interval of the strict score, low end"
    )
    strict_how2score_ci_high = serializers.FloatField(allow_null=True, help_text="... and high end")
    n_examples = serializers.IntegerField()
    n_with_failures = serializers.IntegerField()
    n_parse_failed = serializers.IntegerField()
    avg_failures_per_example = serializers.FloatField()


class LeaderboardRowSerializer(ScoreRowSerializer):
    """A leaderboard row: the score, the judge's coverage and the generator's metrics."""

    coverage_percent = serializers.FloatField(
        allow_null=True,
        help_text="judgments / the generator's generations with an L2, in %: under 100 a partial run",
    )
    # The generator's metrics (same for every judge); null where not computed (`manage.py compute_metrics`).
    n_generations = serializers.IntegerField(help_text="the generator's generations without an error")
    n_with_metrics = serializers.IntegerField(help_text="how many of them have their metrics computed")
    avg_tokens = serializers.FloatField(
        allow_null=True, help_text="mean tiktoken o200k_base tokens of the L2 steps (paper D.5)"
    )
    gen_ref_ratio_percent = serializers.FloatField(
        allow_null=True, help_text="mean per-example 100 * L2 tokens / L1 tokens (paper D.5 rho)"
    )
    step_count_mismatch_percent = serializers.FloatField(
        allow_null=True, help_text="% of examples whose L2 step count differs from L1 (paper D.3)"
    )
    duplicate_step_percent = serializers.FloatField(
        allow_null=True, help_text="% of examples with a verbatim repeated step (paper D.3)"
    )
    duplicate_ngram_percent = serializers.FloatField(
        allow_null=True, help_text="mean duplicate n-gram rate, n = 1..4, in % (paper D.3)"
    )


class LeaderboardPairedRowSerializer(LeaderboardRowSerializer):
    """A leaderboard row with its paired test against the next row down of the same judge."""

    p_holm_next = serializers.FloatField(
        allow_null=True,
        help_text="Holm-adjusted exact McNemar p against the next generator down (null: the judge's last)",
    )
    separable_from_next = serializers.BooleanField(allow_null=True, help_text="p_holm_next < 0.05")


class TopicLeaderboardRowSerializer(ScoreRowSerializer):
    """Shape of selectors.TopicLeaderboardRow.as_json(): the score of a generator x judge on one topic."""

    topic = serializers.CharField(help_text='the topic ("" for judgments without one)')


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file sent in a multipart body (the schema says binary, not a URL string)."""


class ImportRequestSerializer(StrictFormSerializer):
    """Multipart body of POST /api/imports/."""

    files = serializers.ListField(child=UploadField(), allow_empty=False, min_length=1)
    kind = serializers.ChoiceField(choices=[("bench", "bench files"), ("h2e", "h2e out_root archive")])
    split = serializers.ChoiceField(choices=Split.choices, default=Split.BENCH)
    skip_invalid = FormBooleanField(default=False)


class RankCorrelationPairSerializer(serializers.Serializer):
    judge_a = serializers.CharField()
    judge_b = serializers.CharField()
    n_generators = serializers.IntegerField(help_text="generators both judges judged")
    kendall_tau = serializers.FloatField(allow_null=True, help_text="Kendall tau-b; null when undefined")
    kendall_tau_ci_low = serializers.FloatField(
        allow_null=True,
        help_text="95 % percentile bootstrap interval over examples (1,000 resamples, seed 0)",
    )
    kendall_tau_ci_high = serializers.FloatField(allow_null=True, help_text="... and its high end")
    kendall_tau_bootstrap_samples = serializers.IntegerField(help_text="resamples where tau was defined")
    spearman_rho = serializers.FloatField(allow_null=True, help_text="Spearman rho; null when undefined")


class RankCorrelationJudgeSerializer(serializers.Serializer):
    judge_id = serializers.CharField()
    model = serializers.CharField()
    is_demo_model = serializers.BooleanField()
    n_generators = serializers.IntegerField()


class RankCorrelationsSerializer(serializers.Serializer):
    judges = RankCorrelationJudgeSerializer(many=True)
    pairs = RankCorrelationPairSerializer(many=True)
