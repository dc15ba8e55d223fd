"""The build reads the embedding store (the model is never loaded when every vector is stored), leaves markup
out, warns when the split by text starves train, and splits by procedure on request."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from goal_step.build_work import train_warning
from goal_step.jobs import build_job_run, task_set_create
from goal_step.models import TaskSplit
from goal_step.selection import SplitBy, selected_procedures
from goal_step.split import normalise, procedures_split
from h2e_site.embeddings.models import TextVector
from h2e_site.embeddings.store import StoredEmbed
from mining.embedding import procedure_texts
from mining.models import Procedure
from tests.factories import make_topic
from tests.goal_step.task_sets import build, embedder, make_procedures, texts_of

pytestmark = pytest.mark.django_db


class NoModel:
    """The real model's identity, without the model: fails the test if anything asks it to embed."""

    spec = embedder().spec

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError(f"asked to embed {len(texts)} texts: their vectors were stored")


def test_a_build_from_stored_vectors_never_embeds() -> None:
    make_procedures()
    StoredEmbed(encoder=embedder()).fill(StoredEmbed(encoder=embedder()).missing(procedure_texts()))
    stored = TextVector.objects.count()
    task_set = task_set_create("stored", enqueue=False)
    assert task_set.job_id is not None
    build_job_run(job_id=task_set.job_id, embedder=NoModel())
    task_set.refresh_from_db()
    assert task_set.examples.exists() and task_set.settings["texts_embedded"] == 0
    assert TextVector.objects.count() == stored
    first = build("embedded-here")  # the same procedures: the same examples
    assert sorted(texts_of(e).__repr__() for e in first.examples.all()) == sorted(
        texts_of(e).__repr__() for e in task_set.examples.all()
    )


def test_a_build_embeds_only_the_texts_it_has_not_seen() -> None:
    make_procedures()
    first = build("first")
    make_procedures(4, seed=7)
    second = build("second")
    new = {
        t for p in Procedure.objects.filter(source_example_id__startswith="gs-7-") for t in (p.goal, *p.steps)
    }
    old = {
        t for p in Procedure.objects.filter(source_example_id__startswith="gs-1-") for t in (p.goal, *p.steps)
    }
    assert first.settings["texts_embedded"] == first.settings["texts"]
    assert second.settings["texts_embedded"] == len(new - old)


def test_the_markup_filter_leaves_scraped_markup_out() -> None:
    make_procedures()
    health = make_topic("Health")
    Procedure.objects.create(
        source_example_id="markup-1",
        topic=health,
        goal="Soothe a sunburned shoulder",
        steps=[
            '{"smallUrl":"https:\\/\\/www.wikihow.com\\/images\\/thumb\\/a\\/a1\\/Sunburn.jpg"}',
            "Apply <b>aloe vera</b> gel generously",
            "Drink plenty of cool water",
        ],
        split="bench",
        ordered=True,
    )
    task_set = build("markup")
    removed = {row["stage"]: row["count"] for row in task_set.funnel["step_inference"]["removed"]}
    assert removed["markup"] >= 2
    texts = {text for example in task_set.examples.all() for text in texts_of(example)}
    assert not {t for t in texts if "smallurl" in t or "aloe vera" in t}
    assert "markup" in task_set.settings["filters"] and "markup" in task_set.settings["ordering_filters"]


def test_the_split_by_procedure_shares_no_procedure() -> None:
    make_procedures(40)
    task_set = build("by-procedure", split_by=SplitBy.PROCEDURE, seed=3)
    procedures, _ = selected_procedures(task_set.selection)
    test_side, train_side = procedures_split(procedures, test_share=0.2, seed=3)
    sides = {TaskSplit.TEST: {p.pk for p in test_side}, TaskSplit.TRAIN: {p.pk for p in train_side}}
    assert len(sides[TaskSplit.TEST]) == 8 and not sides[TaskSplit.TEST] & sides[TaskSplit.TRAIN]
    owners: dict[str, set[int]] = {}
    for procedure in Procedure.objects.all():
        for text in (procedure.goal, *procedure.steps):
            owners.setdefault(normalise(text), set()).add(procedure.pk)
    examples = list(task_set.examples.all())
    assert {e.split for e in examples} == {TaskSplit.TEST, TaskSplit.TRAIN}
    for example in examples:
        side = sides[TaskSplit(example.split)]
        assert example.procedure_id in side
        assert all(owners[text] & side for text in texts_of(example)), example.pk
    for funnel in task_set.funnel.values():
        assert funnel["shared_with_test"] == 0 and funnel["warning"] == ""
    assert task_set.selection["split_by"] == "procedure"


def test_it_warns_when_the_split_by_text_keeps_too_little_of_train() -> None:
    warning = train_warning(8, 1_759, task="step_inference")
    assert "train keeps 8 of 1,767 examples (0%, under 50%)" in warning and "by procedure" in warning
    assert train_warning(120, 100, task="step_ordering") == ""
    assert train_warning(0, 0, task="goal_inference") == ""
