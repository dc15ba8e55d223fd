"""What the mining app embeds (paper §E.1): a procedure as one text for the train/bench deduplication, and
its goal and steps on their own for the goal-step tasks. The vectors themselves are stored data
(h2e_site.embeddings): this module names the texts, the `procedures` source of the `embed` job."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from h2e_site.embeddings.sources import TextSource, text_source_register

from .models import Procedure

PROCEDURES = "procedures"  # the text source's name


def procedure_text(goal: str, steps: Sequence[str]) -> str:
    """What is embedded for a procedure (paper §E.1): the goal, a newline, the numbered steps."""
    return goal + "\n" + "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))


def procedure_texts() -> Iterator[str]:
    """Every procedure's goal, steps and whole text (the `procedures` text source), in pk order."""
    rows = Procedure.objects.order_by("pk").values_list("goal", "steps")
    for goal, steps in rows.iterator(chunk_size=2_000):
        yield goal
        yield from steps
        yield procedure_text(goal, steps)


def register_text_sources() -> None:
    text_source_register(TextSource(PROCEDURES, "procedures (goals, steps and whole texts)", procedure_texts))
