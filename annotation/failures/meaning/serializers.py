"""The API's body for starting a `failure_patterns` job (POST /api/jobs/ {"kind": "failure_patterns", ...});
k's and seed's bounds are FailurePatternRun's fields' (h2e_site.bounds.model_range), as the form's."""

from __future__ import annotations

from rest_framework import serializers

from annotation.base.job_kinds import FAILURE_PATTERNS
from annotation.failures.meaning.jobs import DEFAULT_K, DEFAULT_SEED
from annotation.failures.meaning.models import FailurePatternRun
from h2e_site.bounds import model_range
from mining.models import Topic


class FailurePatternsJobCreateSerializer(serializers.Serializer):
    """Cluster a topic's critical-failure descriptions into k patterns (faiss k-means with a seed)."""

    kind = serializers.ChoiceField(choices=[(FAILURE_PATTERNS, "failure patterns of a topic")])
    topic = serializers.CharField(max_length=200, help_text="the topic's name")
    k = model_range(FailurePatternRun, "k").api_field(
        required=False,
        allow_null=True,
        default=None,
        help_text=f"clusters; absent or null: chosen from the topic's failures with a stored vector, n "
        f"(⌊√(n/2)⌋, from 2 to {DEFAULT_K}). More than n is refused (400) with n in the message.",
    )
    seed = model_range(FailurePatternRun, "seed").api_field(
        default=DEFAULT_SEED, help_text="faiss k-means' seed: the same seed gives the same clusters"
    )

    def validate_topic(self, value: str) -> Topic:
        topic = Topic.objects.filter(name=value).first()
        if topic is None:
            raise serializers.ValidationError(f"no topic named {value[:80]!r}")
        return topic
