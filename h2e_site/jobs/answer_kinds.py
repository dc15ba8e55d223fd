"""A job that answers items from a config, declared once per kind of answer (each app declares its own).

An `AnswerKind` says what a kind of answer's configured model is: its table (a ConfiguredModel), the role its
config is read as, how messages name a row, why an imported row cannot run, the id function that hashes a
config and its prompt text, and how to read the prompts a row's jobs send (checked against their hash). From
that, written once here: the config a row runs with (`config_of`), the row of a config (`row_for_config`,
found by its id, created on first use), the check made when a job is created (`checked_config`: fails now,
not on the worker) and the job over a list of items (`job_create`, the row's pk and id among its
parameters).

`ConfiguredWork` is the answering work (answering.AnsweringWork) of a kind of answer: it loads the job's row,
its config and its prompts, and runs (`run_job`) or retries (`retry`) a job; the kind supplies which items are
answered, the item rows, one item's request, how to save results and the job that asks again. The Celery task
that runs a kind's jobs is made by answering_tasks.answering_task, a command that starts one is an
answer_command.AnsweringCommand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from h2e_site.llm.base import LLMBackend
from h2e_site.llm.config import ModelConfig, Role, config_identity, hashed_id

from .answering import AnsweringWork, answering_job_create, config_of_row, model_row_for_config
from .configured_models import ConfiguredModel
from .loop import job_run
from .models import Job

if TYPE_CHECKING:
    from django.contrib.auth.models import User

M = TypeVar("M", bound=ConfiguredModel)
P = TypeVar("P")  # what a row's prompts are read as (one text, a task's templates, ...)


@dataclass(frozen=True)
class AnswerKind(Generic[M, P]):
    """A kind of answer: the kind of job (Job.kind) and the configured model that answers (see the module
    doc)."""

    kind: str  # the name stored in Job.kind
    model: type[M]  # the configured model's table
    role: Role  # the role its config is read as
    label: str  # how messages name a row: "<label> <its id>"
    refusal: str  # why a row with no config (imported) cannot run
    id_of: Callable[[ModelConfig, str], str]  # its id from a config and the prompt text it sends
    prompts: Callable[[M], P]  # the prompts a row's jobs send (PromptChanged when they no longer hash)

    @property
    def parameter(self) -> str:
        """The job parameter holding the row's pk: its id field without "_id" ("model" for model_id)."""
        return self.model.id_field.removesuffix("_id")

    def label_of(self, row: M) -> str:
        return f"{self.label} {row.ident}"

    def config_of(self, row: M) -> ModelConfig:
        """The config a row runs with (its stored config); ConfigError(label, "config", refusal) for an
        imported row."""
        return config_of_row(
            row.config_to_run(), role=self.role, label=self.label_of(row), refusal=self.refusal
        )

    def row_for_config(
        self,
        config: ModelConfig,
        prompt_text: str,
        *,
        stored_config: dict[str, Any] | None = None,
        more: Callable[[str], dict[str, Any]] | None = None,
    ) -> M:
        """The row of this config and prompt text: found by its id, created on first use (see
        answering.model_row_for_config)."""
        return model_row_for_config(
            self.model,
            id_field=self.model.id_field,
            id_of=self.id_of,
            config=config,
            prompt_text=prompt_text,
            stored_config=stored_config,
            more=more,
        )

    def checked_config(self, row: M) -> ModelConfig:
        """The config of a row a job is made for, with its prompts read: an imported row, or prompts that
        changed since the row was made, fail now rather than on the worker."""
        config = self.config_of(row)
        self.prompts(row)
        return config

    def job_create(
        self,
        row: M,
        config: ModelConfig,
        items: list[int],
        parameters: dict[str, Any],
        *,
        created_by: User | None = None,
        enqueue: bool = True,
        retry_of: int | None = None,
    ) -> Job:
        """A job of this kind over `items` answered by `row` (its pk and id first among the parameters, then
        the kind's own). Enqueued once the surrounding transaction commits (enqueue=False: not at all)."""
        parameters = {self.parameter: row.pk, self.model.id_field: row.ident, **parameters}
        return answering_job_create(
            self.kind, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
        )


class ConfiguredWork(AnsweringWork, Generic[M, P]):
    """The answering work of a kind of answer (`answers`): the job's row, its config and its prompts, loaded
    when the work is made. A kind supplies answered(), rows(), request(), save() and again()."""

    answers: AnswerKind[M, P]

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job, backend)
        answers = self.answers
        self.row: M = answers.model._default_manager.get(pk=job.parameters[answers.parameter])
        self.config = answers.config_of(self.row)
        self.prompts: P = answers.prompts(self.row)

    @classmethod
    def run_job(cls, *, job_id: int, backend: LLMBackend | None = None) -> Job | None:
        """Run (or resume) a job of this kind. `backend` is for callers that bring their own (benchmarks)."""
        return job_run(job_id, cls.answers.kind, lambda job: cls(job, backend))


def hashed_model_id(
    config: ModelConfig,
    prompt_text: str,
    *,
    name: str,
    version: str,
    output: str,
    with_prompt_style: bool = False,
) -> str:
    """The studio's id of a configured model whose prompts are several files (prompt_text: their JSON object,
    answering.prompts_json): h2e_site.llm.config.hashed_id over {"<name>_id_version": version, name: the
    config's identity, held to `output`} and the SHA-256 of each prompt."""
    identity = config_identity(config, output=output, with_prompt_style=with_prompt_style)
    return hashed_id({f"{name}_id_version": version, name: identity}, json.loads(prompt_text))
