"""One slice for "a model answers every item of a set", whichever app's kind of job it is
(docs/architecture.md shows a new one).

- A configured model is a row found by its hashed identity: `model_row_for_config` gets or creates it (the
  id function stays with the app that owns the row and is passed in); `config_of_row` is the config a row
  runs with; `stored_prompts` the prompt texts it keeps (checked against their hash).
- `answering_job_create` makes the job over a fixed list of items (parameters["items"], "failed_items").
- `AnsweringWork` runs it on the loop (loop.ItemWork): a kind says which items this model has answered, how
  to read a chunk of item rows, the request for one item and how to save a group of results; the base owns
  the pending items (those without an answer, nor failed in this job), failed items, retry, and the cost and
  latency accounting of the loop (Usage in parameters["usage"]).
- Failed items are recorded one way for every kind: an API or connection error (or an item whose request
  cannot be built) is a failed item of the job, its pk in parameters["failed_items"], written in the same
  transaction as the answers of its group, so a resumed job asks neither again. The Jobs page shows the
  count and the first errors, and "Retry failed items" (JobType.retry = the kind's AnsweringWork.retry)
  starts a job over those still unanswered. A kind may keep its own record beside it (a table of its errors)
  and say which of them still stand (`still_failed`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import yaml
from django.db import IntegrityError, models, transaction

from h2e_site.llm.base import BackendConfig, LLMBackend, LLMRequest, LLMResult
from h2e_site.llm.config import (
    CONFIG_FIELDS,
    ConfigError,
    ModelConfig,
    Role,
    config_from_mapping,
    decoding_request,
    load_config,
)
from h2e_site.llm.prompts import check_prompt, prompt_sha256

from .loop import ItemWork, Progress
from .models import Job
from .services import NothingToRetry, job_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Row = TypeVar("Row", bound=models.Model)


class NothingToAsk(ValueError):
    """The model has answered every item asked for: no job to make."""


# --- configured models ----------------------------------------------------------------------------------


def config_without_prompt_path(
    config_path: Path | str, *, role: Role, used_for: str, prompts: str
) -> ModelConfig:
    """A config of `role` for a use whose prompts are fixed files (`prompts` names them): prompt_path is
    refused (ConfigError naming the file and field)."""
    config = load_config(config_path, role=role)
    data = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    if "prompt_path" in data:
        raise ConfigError(
            str(config_path),
            "prompt_path",
            f"not used for {used_for}: the prompts are {prompts}; leave it out",
        )
    return config


def model_row_for_config(
    model: type[Row],
    *,
    id_field: str,
    id_of: Callable[[ModelConfig, str], str],
    config: ModelConfig,
    prompt_text: str,
    stored_config: dict[str, Any] | None = None,
    more: Callable[[str], dict[str, Any]] | None = None,
) -> Row:
    """The row of `model` for this config and prompt text, found by `id_field` = id_of(config, prompt_text)
    and created on first use with the config (`stored_config`, default the resolved one), the prompt text
    and its SHA-256 (and `more(id)`'s fields). A row that exists keeps its identity and prompt, and takes
    the latest config (only operational fields, e.g. base_url or concurrency, can differ under one id)."""
    ident = id_of(config, prompt_text)
    demo = _has_field(model, "is_demo_model")
    defaults: dict[str, Any] = {
        "model": config.model,
        "backend": config.backend,
        "config": config.as_json() if stored_config is None else stored_config,
        "prompt_text": prompt_text,
        "prompt_sha256": prompt_sha256(prompt_text),
        **({"is_demo_model": config.is_demo_model} if demo else {}),
        **(more(ident) if more else {}),
    }
    manager = model._default_manager
    try:
        with transaction.atomic():
            row, created = manager.get_or_create(**{id_field: ident}, defaults=defaults)
    except IntegrityError:  # created concurrently by another process
        row, created = manager.get(**{id_field: ident}), False
    if not created and row.config != defaults["config"]:  # type: ignore[attr-defined]
        row.config = defaults["config"]  # type: ignore[attr-defined]
        if demo:
            row.is_demo_model = row.is_demo_model or config.is_demo_model  # type: ignore[attr-defined]
        row.save(update_fields=["config", *(["is_demo_model"] if demo else [])])
    return row


def _has_field(model: type[models.Model], name: str) -> bool:
    return any(f.name == name for f in model._meta.get_fields())


def config_of_row(stored: dict[str, Any], *, role: Role, label: str, refusal: str) -> ModelConfig:
    """The config a row runs with (its stored config, prompt_path aside when `role`'s prompts are fixed);
    ConfigError(label, "config", refusal) for a row with none (imported)."""
    if not stored:
        raise ConfigError(label, "config", refusal)
    data = {key: value for key, value in stored.items() if key in CONFIG_FIELDS}
    return config_from_mapping(data, role=role, source=label)


def prompts_json(prompts: Mapping[str, str]) -> str:
    """Several prompt texts as one, as stored and hashed: a JSON object name -> text."""
    return json.dumps(dict(prompts), sort_keys=True, ensure_ascii=False, indent=2)


def stored_prompts(prompt_text: str, *, expected_sha256: str, label: str, what: str) -> dict[str, str]:
    """The prompt texts a row keeps (prompts_json), checked against its hash (PromptChanged otherwise);
    ValueError naming `what` they should be when the text is not a JSON object."""
    text = check_prompt(prompt_text, expected_sha256=expected_sha256, label=label)
    try:
        stored = json.loads(text)
    except ValueError:
        stored = None
    if not isinstance(stored, dict):
        raise ValueError(f"{label}: prompt_text is not {what} (a JSON object by name)")
    return {str(name): str(value) for name, value in stored.items()}


def output_constraint(config: ModelConfig, grammar: str) -> str:
    """How an answer is held to its form, part of the model's identity (it changes what is asked): the
    embedded model by the grammar named `grammar`, a json_schema config by the answer schema, else none."""
    if config.backend == "local":
        return f"grammar:{grammar}"
    return "json_schema:answer" if config.json_schema else "none"


def constrained_request(
    config: ModelConfig, *, key: str, prompt: str, grammar: str, schema: dict[str, Any]
) -> LLMRequest:
    """One question under the config's decoding: the embedded model under `grammar` (GBNF), a json_schema
    config under `schema`, any other model free."""
    constraint = output_constraint(config, "")
    return decoding_request(
        config,
        key=key,
        prompt=prompt,
        grammar=grammar if constraint.startswith("grammar:") else None,
        json_schema=schema if constraint == "json_schema:answer" else None,
    )


# --- jobs -----------------------------------------------------------------------------------------------


def answering_job_create(
    kind: str,
    config: ModelConfig,
    items: list[int],
    parameters: dict[str, Any],
    *,
    created_by: User | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job of `kind` over `items` (with the kind's own `parameters`, the backend that routes it to a
    queue, and the job it retries). Enqueued once the surrounding transaction commits (enqueue=False: not
    at all)."""
    parameters = {
        **parameters,
        "backend": config.backend,
        "items": items,
        "failed_items": [],
        **({"retry_of": retry_of} if retry_of else {}),
    }
    return job_create(
        kind=kind, parameters=parameters, total=len(items), created_by=created_by, enqueue=enqueue
    )


class AnsweringWork(ItemWork):
    """A model answering each item of a job (see the module doc). A kind sets `config` in __init__ and
    supplies answered(), rows(), request(), save() and again()."""

    config: ModelConfig
    answered_verb: ClassVar[str] = "answered"  # "... left to retry (they were <verb> since)"

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job)
        self.backend = backend
        self.failed_items: set[int] = set(job.parameters.get("failed_items", []))

    # --- what a kind supplies ---
    def answered(self, pks: Sequence[int]) -> set[int]:
        """Those of `pks` this job's model has answered (as the job counts an answer)."""
        raise NotImplementedError

    def rows(self, pks: Sequence[int]) -> Mapping[int, Any]:
        """The item rows of `pks` that exist, by pk."""
        raise NotImplementedError

    def request(self, pk: int, row: Any) -> LLMRequest:
        """The request for one item; ValueError or KeyError when it cannot be asked (a failed item)."""
        raise NotImplementedError

    def save(self, results: Sequence[LLMResult]) -> None:
        """Write the answers of these results (failed ones included, to write or skip), inside the
        transaction that records the failed items."""
        raise NotImplementedError

    def again(self, pks: list[int], created_by: User | None) -> Job:
        """A job over `pks` with this job's model and settings (retry_of this job); NothingToAsk when
        none is left to ask."""
        raise NotImplementedError

    def failed_before(self) -> set[int]:
        """The items this job recorded as failed (a kind keeping its own record may add to them)."""
        return self.failed_items

    def still_failed(self) -> set[int]:
        """The failed items of this job that are still unanswered (what a retry asks again)."""
        failed = self.failed_before()
        return failed - self.answered(sorted(failed))

    # --- what the base does ---
    def backend_config(self) -> BackendConfig:
        return self.config.backend_config()

    def pending_and_counts(self) -> tuple[list[int], Progress]:
        answered, failed = self.answered(self.items), self.failed_before()
        progress = Progress()
        pending = []
        for pk in self.items:
            if pk in answered:
                progress.done += 1
            elif pk in failed:
                progress.failed += 1
            else:
                pending.append(pk)
        return pending, progress

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        rows = self.rows(pks)
        requests = []
        for pk in self.present(pks, rows):
            try:
                requests.append(self.request(pk, rows[pk]))
            except (KeyError, ValueError) as exc:  # e.g. the item changed under the job
                self.progress.failed += 1
                self.failed_items.add(pk)
                self.keep_error(f"item {pk}: {exc}")
        return requests

    def store(self, results: Sequence[LLMResult]) -> None:
        self.failed_items.update(int(result.key) for result in results if not result.ok)
        with transaction.atomic():
            self.save(results)
            self._write_failed_items()

    def write_progress(self, *, force: bool = False) -> None:
        if force:
            self._write_failed_items()
        super().write_progress(force=force)

    def _write_failed_items(self) -> None:
        if set(self.job.parameters.get("failed_items", [])) != self.failed_items:
            self.job.parameters = {**self.job.parameters, "failed_items": sorted(self.failed_items)}
            Job.objects.filter(pk=self.job.pk).update(parameters=self.job.parameters)

    @classmethod
    def retry(cls, job: Job, created_by: User | None) -> Job:
        """A new job over the items of `job` that failed and are still unanswered (JobType.retry)."""
        work = cls(job)
        failed = work.still_failed()
        if not failed:
            raise NothingToRetry(
                f"job {job.pk} has no failed items left to retry (they were {cls.answered_verb} since)"
            )
        try:
            return work.again(sorted(failed), created_by)
        except NothingToAsk as nothing:  # the items left the set since
            raise NothingToRetry(str(nothing)) from None
