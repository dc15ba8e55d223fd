"""What the task set pages show: the builder's funnel and the artifact check per task, and the counts."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from .models import GoalStepTask, TaskExample, TaskSet, TaskSplit

NO_TOPIC = "(no topic)"
SAMPLE_SIZE = 3
STAGE_LABELS = {
    "too_few_negatives": "Too few negatives (other topics)",
    "same_goal": "Two candidates' procedures share a goal",
    "not_ordered": "Procedure not ordered",
    "length": "Length filter",
    "lexical_overlap": "Lexical-overlap filter",
    "tfidf": "TF-IDF filter",
    "similarity": "Similarity filter",
    "distinct": "Same step twice",
    "markup": "Markup filter (JSON, HTML, URLs)",
    "duplicate": "Same example drafted twice",
}


@dataclass(frozen=True)
class FunnelStage:
    stage: str
    label: str
    removed: int
    remaining: int
    percent: float  # remaining / candidates in
    reasons: list[str]


@dataclass(frozen=True)
class TaskFunnel:
    task: str
    label: str
    candidates_in: int
    stages: list[FunnelStage]
    kept: int
    test: int
    train: int
    shared_with_test: int
    warning: str = ""

    @property
    def kept_percent(self) -> float:
        return 100 * self.kept / self.candidates_in if self.candidates_in else 0.0

    @property
    def why_none(self) -> str:
        """Why the task kept no example, said on the set's page ("" when it kept some): the stage that
        removed them all, and what would keep some."""
        if self.kept or not self.candidates_in:
            return ""
        last = max(self.stages, key=lambda stage: stage.removed, default=None)
        if last is None:
            return ""
        if last.stage == "not_ordered":
            return (
                "Step Ordering uses ordered procedures only, and none of these is marked ordered: an "
                "“ordered” field at import, How2Mine's sequential verdict, or a step-types study whose "
                "annotators mark an adjacent pair sequential makes one ordered."
            )
        return (
            f"No example kept: the {last.label.lower()} removed most ({last.removed:,} of "
            f"{self.candidates_in:,}); more procedures (or more topics) give the filters more to keep."
        )

    @property
    def adds_up(self) -> bool:
        return self.candidates_in - sum(s.removed for s in self.stages) == self.kept


@dataclass(frozen=True)
class ArtifactLine:
    task: str
    label: str
    k: int
    n: int
    share: float | None
    ci_low: float | None
    ci_high: float | None
    chance: float | None
    at_chance: bool | None

    def percent(self, value: float | None) -> float | None:
        return None if value is None else 100 * value

    @property
    def share_percent(self) -> float | None:
        return self.percent(self.share)

    @property
    def ci_low_percent(self) -> float | None:
        return self.percent(self.ci_low)

    @property
    def ci_high_percent(self) -> float | None:
        return self.percent(self.ci_high)

    @property
    def ci_width_percent(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return 100 * (self.ci_high - self.ci_low)

    @property
    def chance_percent(self) -> float | None:
        return self.percent(self.chance)


@dataclass(frozen=True)
class TaskCount:
    task: str
    label: str
    test: int
    train: int


@dataclass
class Counts:
    """Examples per task and split, and per topic and task."""

    by_task: dict[str, dict[str, int]] = field(default_factory=dict)
    by_topic: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    total: int = 0

    @property
    def task_rows(self) -> list[TaskCount]:
        rows = []
        for task in GoalStepTask:
            by_split = self.by_task.get(task.value, {})
            rows.append(
                TaskCount(
                    task.value, task.label, by_split.get(TaskSplit.TEST, 0), by_split.get(TaskSplit.TRAIN, 0)
                )
            )
        return rows


def task_funnels(task_set: TaskSet) -> list[TaskFunnel]:
    """Per task, in the order of TASKS: in, each stage's removals with what remains after it, kept."""
    funnels = []
    for task in GoalStepTask:
        data: dict[str, Any] = task_set.funnel.get(task.value) or {}
        if not data:
            continue
        remaining = int(data.get("in", 0))
        stages = []
        for row in data.get("removed", []):
            remaining -= int(row["count"])
            stages.append(
                FunnelStage(
                    stage=row["stage"],
                    label=STAGE_LABELS.get(row["stage"], row["stage"]),
                    removed=int(row["count"]),
                    remaining=remaining,
                    percent=100 * remaining / data["in"] if data.get("in") else 0.0,
                    reasons=list(row.get("reasons", [])),
                )
            )
        funnels.append(
            TaskFunnel(
                task=task.value,
                label=task.label,
                candidates_in=int(data.get("in", 0)),
                stages=stages,
                kept=int(data.get("kept", 0)),
                test=int(data.get("test", 0)),
                train=int(data.get("train", 0)),
                shared_with_test=int(data.get("shared_with_test", 0)),
                warning=str(data.get("warning", "")),
            )
        )
    return funnels


def artifact_lines(task_set: TaskSet) -> list[ArtifactLine]:
    lines = []
    for task in GoalStepTask:
        data: dict[str, Any] = task_set.artifacts.get(task.value) or {}
        if not data:
            continue
        lines.append(
            ArtifactLine(
                task=task.value,
                label=task.label,
                k=int(data.get("k", 0)),
                n=int(data.get("n", 0)),
                share=data.get("share"),
                ci_low=data.get("ci_low"),
                ci_high=data.get("ci_high"),
                chance=data.get("chance"),
                at_chance=data.get("at_chance"),
            )
        )
    return lines


def example_counts(task_set: TaskSet) -> Counts:
    """Two queries: per (task, split), and per (topic, task)."""
    counts = Counts()
    rows = task_set.examples.values_list("task", "split").annotate(n=Count("pk")).order_by()
    for task, split, n in rows:
        counts.by_task.setdefault(task, {s: 0 for s in TaskSplit.values})[split] = n
        counts.total += n
    by_topic: dict[str, dict[str, int]] = defaultdict(lambda: {t: 0 for t in GoalStepTask.values})
    for topic, task, n in (
        task_set.examples.values_list("topic__name", "task").annotate(n=Count("pk")).order_by()
    ):
        by_topic[topic or NO_TOPIC][task] = n
    counts.by_topic = sorted(by_topic.items(), key=lambda item: (item[0] == NO_TOPIC, item[0]))
    return counts


def example_sample(task_set: TaskSet, *, size: int = SAMPLE_SIZE) -> dict[str, list[TaskExample]]:
    """The first test examples of each task (one query per task)."""
    return {
        task: list(task_set.examples.filter(task=task, split=TaskSplit.TEST).select_related("topic")[:size])
        for task in GoalStepTask.values
    }
