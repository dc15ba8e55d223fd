"""Procedures in the database for the task-set tests (jobs, pages, import/export): ~30 synthetic ones in four
topics (a few without), about half ordered, built with the real embedding model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from goal_step.jobs import build_job_run, task_set_create
from goal_step.models import TaskExample, TaskSet
from goal_step.split import normalise
from h2e_site.embeddings.encoders import MiniLMEmbedder
from h2e_site.jobs.models import Job
from mining.models import Procedure, Split
from tests.factories import make_topic
from tests.goal_step.synthetic import synthetic_procedures

TOPICS = ("Health", "Food & Dining", "Travel", "Finance")
N_PROCEDURES = 30


class SessionEmbedder(MiniLMEmbedder):
    """The real all-MiniLM-L6-v2, each text embedded once per session: the goal-step tests build task sets
    from the same synthetic procedures again and again, and a text's vector does not change."""

    def __init__(self) -> None:
        super().__init__()
        self._vectors: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        new = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if new:
            self._vectors.update(zip(new, super().encode(new), strict=True))
        if not texts:
            return super().encode(texts)
        return np.stack([self._vectors[text] for text in texts])


_EMBEDDER: list[MiniLMEmbedder] = []


def embedder() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2, loaded once for the session (and each text embedded once)."""
    if not _EMBEDDER:
        _EMBEDDER.append(SessionEmbedder())
    return _EMBEDDER[0]


def make_procedures(n: int = N_PROCEDURES, *, split: str = Split.BENCH, seed: int = 1) -> list[Procedure]:
    rows = []
    for text in synthetic_procedures(n, seed=seed, topics=TOPICS, no_topic_share=0.1):
        rows.append(
            Procedure(
                source_example_id=f"gs-{seed}-{text.pk}",
                topic=make_topic(text.topic) if text.topic else None,
                goal=text.goal,
                steps=list(text.steps),
                split=split,
                ordered=text.ordered,
            )
        )
    return Procedure.objects.bulk_create(rows)


def build(
    name: str = "set-a", *, on_progress: Callable[[Job], None] | None = None, **options: Any
) -> TaskSet:
    """A task set built here (the job run in this process) with the real embedding model."""
    task_set = task_set_create(name, enqueue=False, **options)
    assert task_set.job_id is not None
    build_job_run(job_id=task_set.job_id, embedder=embedder(), on_progress=on_progress)
    task_set.refresh_from_db()
    return task_set


def texts_of(example: TaskExample) -> set[str]:
    return {normalise(text) for text in (example.prompt, *example.candidates)}


def signature(task_set: TaskSet) -> list[tuple[Any, ...]]:
    return list(
        task_set.examples.order_by("task", "position").values_list(
            "task", "split", "position", "prompt", "candidates", "answer", "procedure_id"
        )
    )
