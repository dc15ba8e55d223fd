"""The four configured models share one abstract base, and each kind of answer is declared once (its model,
the job parameter naming the row, its Celery task made by the core)."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.kinds.step_types.classify import STEP_TYPE_CLASSIFICATION, ClassifyWork
from annotation.kinds.step_types.models import StepTypeClassifier
from annotation.kinds.step_types.tasks import run_classify_job
from goal_step.answer import TASK_ANSWERS, AnswerWork
from goal_step.models import TaskModel
from goal_step.tasks import run_answer_tasks_job
from h2e_site.jobs.answer_kinds import AnswerKind, ConfiguredWork
from h2e_site.jobs.configured_models import ConfiguredModel
from judging.configs import GENERATION, JUDGING
from judging.generate_jobs import GenerateWork
from judging.judge_jobs import JudgeWork
from judging.models import Generator, Judge
from judging.tasks import run_generate_job, run_judge_job

KINDS: list[tuple[AnswerKind[Any, Any], type[ConfiguredWork[Any, Any]], Any, str, str]] = [
    (GENERATION, GenerateWork, run_generate_job, "judging.run_generate_job", "generator"),
    (JUDGING, JudgeWork, run_judge_job, "judging.run_judge_job", "judge"),
    (TASK_ANSWERS, AnswerWork, run_answer_tasks_job, "mining.run_answer_tasks_job", "model"),
    (STEP_TYPE_CLASSIFICATION, ClassifyWork, run_classify_job, "annotation.run_classify_job", "classifier"),
]


@pytest.mark.parametrize("table", [Generator, Judge, TaskModel, StepTypeClassifier])
def test_the_four_tables_share_the_configured_model_base(table: type[ConfiguredModel]) -> None:
    assert issubclass(table, ConfiguredModel) and not table._meta.abstract
    names = {field.name for field in table._meta.concrete_fields}
    assert {
        "model",
        "backend",
        "config",
        "prompt_text",
        "prompt_sha256",
        "created_at",
        table.id_field,
    } <= names
    row = table(model="m", **{table.id_field: "abc123"})
    assert row.ident == "abc123" and str(row) == "m (abc123)"


@pytest.mark.parametrize(("answers", "work", "task", "task_name", "parameter"), KINDS)
def test_each_kind_of_answer_is_declared_once(
    answers: AnswerKind[Any, Any],
    work: type[ConfiguredWork[Any, Any]],
    task: Any,
    task_name: str,
    parameter: str,
) -> None:
    assert work.answers is answers
    assert answers.parameter == parameter
    assert task.name == task_name and task.acks_late and task.reject_on_worker_lost
