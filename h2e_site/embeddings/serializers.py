"""The API's body for starting an `embed` job (POST /api/jobs/ {"kind": "embed", ...})."""

from __future__ import annotations

import importlib.util
from typing import Any

from rest_framework import serializers

from .job_kinds import EMBED
from .jobs import CPU, GPU, MODEL_KEY_MAX_LENGTH
from .sources import text_source_choices
from .specs import DEFAULT_EMBEDDING_MODEL


class EmbedJobCreateSerializer(serializers.Serializer):
    """Embed every text of some sources that has no vector yet under a model."""

    kind = serializers.ChoiceField(choices=[(EMBED, "embed texts")])
    sources = serializers.ListField(
        child=serializers.ChoiceField(choices=[]),
        required=False,
        help_text="text sources (none: every source)",
    )
    model = serializers.CharField(
        default=DEFAULT_EMBEDDING_MODEL,
        max_length=MODEL_KEY_MAX_LENGTH,
        help_text="'minilm' (all-MiniLM-L6-v2, packaged) or a sentence-transformers model where "
        "it is installed",
    )

    device = serializers.ChoiceField(
        choices=[(CPU, "a CPU worker (the default queue)"), (GPU, "a GPU worker (the gpu queue, CUDA)")],
        default=CPU,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sources"].child.choices = text_source_choices()  # type: ignore[attr-defined]

    def validate_model(self, value: str) -> str:
        if value != DEFAULT_EMBEDDING_MODEL and importlib.util.find_spec("sentence_transformers") is None:
            raise serializers.ValidationError(
                f"{value!r} would need sentence-transformers, which is not installed here; "
                f"'{DEFAULT_EMBEDDING_MODEL}' needs nothing more"
            )
        return value
