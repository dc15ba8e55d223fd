"""What the mining app embeds (paper §E.1): a procedure as one text for the train/bench deduplication, and
its goal and steps on their own for the goal-step tasks. The vectors themselves are stored data
(h2e_site.embeddings): this module names the texts, the `procedures` source of the `embed` job."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from h2e_site.embeddings.sources import TextSource, text_source_register

from .models import Procedure

PROCEDURES = "procedures"  # the text sources' names
WHOLE_PROCEDURES = "whole_procedures"


def procedure_text(goal: str, steps: Sequence[str]) -> str:
    """What is embedded for a procedure (paper §E.1): the goal, a newline, the numbered steps."""
    return goal + "\n" + "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))


def procedure_texts() -> Iterator[str]:
    """Every procedure's goal and steps (the `procedures` text source: what the goal-step tasks embed), in pk
    order."""
    rows = Procedure.objects.order_by("pk").values_list("goal", "steps")
    for goal, steps in rows.iterator(chunk_size=2_000):
        yield goal
        yield from steps


def whole_procedure_texts() -> Iterator[str]:
    """Every procedure as one text (the `whole_procedures` source: what the train/bench dedup embeds; ten
    times a step's tokens, so embedded on its own, when a split or a command asks for it)."""
    rows = Procedure.objects.order_by("pk").values_list("goal", "steps")
    for goal, steps in rows.iterator(chunk_size=2_000):
        yield procedure_text(goal, steps)


def register_text_sources() -> None:
    text_source_register(TextSource(PROCEDURES, "procedures' goals and steps", procedure_texts))
    text_source_register(
        TextSource(WHOLE_PROCEDURES, "whole procedures (the dedup's texts)", whole_procedure_texts)
    )
