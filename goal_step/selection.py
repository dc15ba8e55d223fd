"""Which procedures a task set is built from: its selection (splits, topics, how it is split) read off the
database as build.py reads procedures. Used by jobs.py (a set with nothing selected is refused) and by
build_work.py (the procedures the job builds from); below both, so neither imports the other for it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import models
from django.db.models import QuerySet

from mining.models import Procedure

from .examples import ProcedureText
from .human_labels import ordered_by_people


class SplitBy(models.TextChoices):
    """How a built set is cut into test and train."""

    TEXT = "text", "by text (the paper, §3.4): train drops every example sharing a text with a test example"
    PROCEDURE = (
        "procedure",
        "by procedure: test procedures are never seen in train (each side built on its own)",
    )


def procedures_selected(selection: dict[str, Any]) -> QuerySet[Procedure]:
    """The procedures of the selection's splits (and of its topics, when it names some)."""
    procedures = Procedure.objects.filter(split__in=selection["splits"])
    if selection.get("topics"):
        procedures = procedures.filter(topic_id__in=selection["topics"])
    return procedures


def selected_procedures(selection: dict[str, Any]) -> tuple[list[ProcedureText], int]:
    """The selection's procedures as build.py reads them (pk order), and how many were left out for an
    empty goal, no steps or an empty step. `ordered`: the procedure's field, else what people labelled
    (human_labels.ordered_by_people: the step-types studies)."""
    rows = procedures_selected(selection).order_by("pk")
    rows_read = rows.values_list("pk", "goal", "steps", "topic__name", "ordered")
    procedures, skipped = [], 0
    for pk, goal, steps, topic, ordered in rows_read.iterator(chunk_size=2000):
        if not goal.strip() or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
            skipped += 1
            continue
        procedures.append(ProcedureText(pk, goal, list(steps), topic, ordered))
    unknown = [int(p.pk) for p in procedures if p.ordered is None]  # database pks
    known = ordered_by_people(unknown)
    if known:
        procedures = [
            replace(p, ordered=known.get(int(p.pk))) if p.ordered is None else p for p in procedures
        ]
    return procedures, skipped
