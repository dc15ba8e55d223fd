"""What the annotation app embeds: the descriptions of the critical failures annotators listed (the
`human_failures` text source of the `embed` job), attention-check items left out as the failure browser
leaves them (their failures are instructed, not found)."""

from __future__ import annotations

from collections.abc import Iterator

from annotation.base.models import AnnotatedFailure
from h2e_site.embeddings.sources import TextSource, text_source_register

HUMAN_FAILURES = "human_failures"


def human_failure_texts() -> Iterator[str]:
    rows = (
        AnnotatedFailure.objects.not_attention_checks().order_by("pk").values_list("description", flat=True)
    )
    yield from rows.iterator(chunk_size=5_000)


def register_text_sources() -> None:
    text_source_register(TextSource(HUMAN_FAILURES, "annotators' critical failures", human_failure_texts))
