"""The types the study engine (services.py, views/) and the study kinds (kinds/) share: a refusal, what a
study selects, the registered kinds' choices. They live below both, so the engine imports the kinds and the
kinds import these without a loop (docs/architecture.md). A kind's own submission lives with the kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from h2e_site.bounds import SEED, Range


class Refused(Exception):
    """A request the rules turn away; `status` is the HTTP status a view answers with, `field` what it
    concerns when that is one part of a form (a form field's name, or a part in the kind's own words, which
    the kind's `refused_form` places)."""

    def __init__(self, message: str, *, status: int = 400, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field


@dataclass(frozen=True)
class KindEntry:
    """What a module below the kinds may know of a registered kind, without importing its spec: its label
    ("Step types", the one every page shows), Study.kind's choice text, the URL name of its agreement endpoint
    ("" for none), and where its spec is (a dotted path, imported the first time the kind is asked for)."""

    label: str
    description: str
    spec: str
    agreement_api: str = ""

    @property
    def noun(self) -> str:
        """'step-types': the kind's name in a sentence ("a step-types study")."""
        return self.label.lower().replace(" ", "-")


# The registered kinds, filled by the registry (annotation/kinds/__init__.py) as it imports them: Study.kind's
# choices are read from here, so a new kind needs no migration of the engine, and a kind's module that names
# the others (the agreement endpoint refusing a study of another kind) reads them here, not in the registry
# that imports it.
KINDS_INDEX: dict[str, KindEntry] = {}


def kind_label(kind: str) -> str:
    """A kind's label as every page shows it (the registry's); an unregistered name as it is stored."""
    entry = KINDS_INDEX.get(kind)
    return entry.label if entry is not None else kind


def kind_choices() -> list[tuple[str, str]]:
    """Study.kind's choices: every registered kind (a callable, so migrations store none of them)."""
    return [(name, entry.description) for name, entry in KINDS_INDEX.items()]


def subject_key(*parts: object) -> str:
    """An item's subject in its kind's words (StudyItem.subject_key: a study has one regular item per
    subject): subject_key("generation", 12) == "generation:12", subject_key("pair", 3, 8) == "pair:3:8"."""
    return ":".join(str(part) for part in parts)


ATTENTION_CHECKS = Range(0, 100)  # instructed-response items of a study
SAMPLE_SIZE = Range(1, 1_000_000)  # a selection's seeded sample


@dataclass(frozen=True)
class Selection:
    """Which subjects a study annotates: the shared part (topics, a seeded sample) and each kind's part, which
    only that kind reads (its `selection_from` fills it, its `items_create` reads it). Empty lists mean
    "any"."""

    topic_ids: list[int] = field(default_factory=list)
    # critical failures: generators, and judges whose disagreements are kept
    generator_ids: list[int] = field(default_factory=list)
    disagreeing_judge_ids: list[int] = field(default_factory=list)  # two judges: keep items they disagree on
    sample_size: int | None = None
    seed: int = 0
    splits: list[str] = field(default_factory=list)  # step types
    task_set: str = ""  # multiple choice: the task set whose test examples are validated
    tasks: list[str] = field(default_factory=list)
    # A calibration sample (the critical-failures kind's calibration/sample.py): "" = none, else a design of
    # judging/sampling.py; the round's size n is sample_size, the judges give the disagreement design's
    # uncertainty.
    calibration_design: str = ""
    calibration_judge_ids: list[int] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "task_set": self.task_set,
            "tasks": self.tasks,
            "splits": self.splits,
            "topic_ids": self.topic_ids,
            "generator_ids": self.generator_ids,
            "disagreeing_judge_ids": self.disagreeing_judge_ids,
            "sample_size": self.sample_size,
            "seed": self.seed,
            "calibration_design": self.calibration_design,
            "calibration_judge_ids": self.calibration_judge_ids,
        }

    def check(self) -> None:
        """OutOfRange naming the number (seed, sample_size) that is out of its range."""
        SEED.check("seed", self.seed)
        if self.sample_size is not None:
            SAMPLE_SIZE.check("sample_size", self.sample_size)
