"""What the judging app embeds: the descriptions of the judges' critical failures (the `judge_failures` text
source of the `embed` job), so that failures can be found by meaning."""

from __future__ import annotations

from collections.abc import Iterator

from h2e_site.embeddings.sources import TextSource, text_source_register

from .models import CriticalFailure

JUDGE_FAILURES = "judge_failures"


def judge_failure_texts() -> Iterator[str]:
    rows = CriticalFailure.objects.order_by("pk").values_list("description", flat=True)
    yield from rows.iterator(chunk_size=5_000)


def register_text_sources() -> None:
    text_source_register(TextSource(JUDGE_FAILURES, "judges' critical failures", judge_failure_texts))
