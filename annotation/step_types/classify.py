"""LLM step-type classification as jobs (SIO paper §3, §6.2): a model answers yes or no for every candidate
of a study's procedures, one request per candidate; h2e_site.jobs runs the loop, this says what to send and
how to store an answer.

- A classifier is a model config (configs/step_types/*.yaml, validated as a judge config: an instruct model)
  plus the three prompt templates of prompts/step_types/. Its classifier_id hashes the config's identity
  fields (model, decoding, how the output is constrained) and the templates' text, as judge ids are made
  (judging/ids.py); the row keeps the templates as it hashed them (`prompt_text`, a JSON object type -> text)
  and its jobs send that text, never whatever the files say when a worker runs. `prompt_path` is refused in
  these configs: the templates are always the three files.
- Items: the StepCandidate pks of the procedures of the study's regular items (attention checks left out),
  minus those this classifier already has a prediction for; fixed when the job is created.
- Each request shows the candidate's context window only (§3): the pair for SEQUENTIAL, the anchor and its
  two succeeding steps for INTERCHANGEABLE and OPTIONAL (llm.step_type_prompt). The embedded model is held to
  "yes" / "no" by a grammar, a config with json_schema to {"answer": "yes" | "no"}; others answer freely.
- An answer is read by llm.parse_answer and upserted as the StepTypePrediction of (classifier, candidate):
  holds None when it cannot be read (the raw output is kept either way). An API or connection error is a
  failed item of the job (its candidate pk in parameters["failed_items"]), never a prediction; "Retry
  failed items" starts a job over those still without one.
- Resumable: any prediction by the classifier counts as done, a failed item of this job as failed; the rest
  is sent. Failed items are written with the predictions of their group, so a resumed job does not re-ask
  them (nor anything already answered).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from django.conf import settings
from django.db import IntegrityError, transaction

from h2e_site.jobs.loop import ItemWork, Progress, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import NothingToRetry, job_create
from h2e_site.llm.base import BackendConfig, LLMBackend, LLMRequest, LLMResult
from h2e_site.llm.config import (
    CONFIG_FIELDS,
    ConfigError,
    ModelConfig,
    config_from_mapping,
    config_identity,
    hashed_id,
    load_config,
)
from h2e_site.llm.prompts import check_prompt, prompt_sha256
from mining.models import Procedure

from ..job_kinds import CLASSIFY_STEPS
from ..kinds.step_types import procedure_candidates
from ..models import StepCandidate, StepTypeClassifier, StepTypePrediction, Study, StudyKind
from .candidates import Candidate, StepType
from .llm import PROMPT_FILES, PROMPTS_DIR, parse_answer, prompt_template, step_type_prompt

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "ANSWER_SCHEMA",
    "CLASSIFIER_ID_VERSION",
    "YES_NO_GRAMMAR",
    "ClassifyWork",
    "NothingToClassify",
    "classifier_config",
    "classifier_for_config",
    "classifier_for_model_config",
    "classifier_id_of",
    "classify_job_create",
    "classify_job_retry",
    "classify_job_run",
    "classify_request",
    "config_for_classifier",
    "configs_dir",
    "step_type_configs",
    "templates_of",
]

CLASSIFIER_ID_VERSION = "h2e_studio.step_type_classifier_id.v1"
YES_NO_GRAMMAR = 'root ::= "yes" | "no"\n'
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}


class NothingToClassify(ValueError):
    """Every candidate of the study already has a prediction by the classifier (or the study has none)."""


# --- configs and classifiers -------------------------------------------------------------------------------


def configs_dir() -> Path:
    """configs/step_types/: the models offered on the study's step-type models page."""
    return Path(settings.BASE_DIR) / "configs" / "step_types"


def step_type_configs() -> list[Path]:
    """The YAML configs of configs/step_types/, by file name."""
    return sorted(configs_dir().glob("*.yaml"))


def classifier_config(config_path: Path | str) -> ModelConfig:
    """A step-type model config: a judge config (an instruct model, the same fields) without prompt_path,
    since the prompts are always prompts/step_types/*.txt. ConfigError naming the file and field."""
    config = load_config(config_path, role="judge")
    data = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    if "prompt_path" in data:
        raise ConfigError(
            str(config_path),
            "prompt_path",
            f"not used for step types: the prompts are {PROMPTS_DIR.name}/*.txt (one per type); leave it out",
        )
    return config


def _prompts_text(templates: dict[str, str]) -> str:
    """The three templates as one text, as stored and hashed: a JSON object type -> template."""
    return json.dumps(templates, sort_keys=True, ensure_ascii=False, indent=2)


def _output_constraint(config: ModelConfig) -> str:
    """How the answer is held to yes / no: part of the classifier's identity (it changes what is asked)."""
    if config.backend == "local":
        return "grammar:yes-no"
    return "json_schema:answer" if config.json_schema else "none"


def classifier_id_of(config: ModelConfig, prompt_text: str) -> str:
    """h2e_site.llm.config.hashed_id over the model's identity (as judge_id's fields, plus the output
    constraint) and the SHA-256 of each prompt template."""
    payload = {
        "classifier_id_version": CLASSIFIER_ID_VERSION,
        "classifier": config_identity(config, output=_output_constraint(config)),
    }
    return hashed_id(payload, json.loads(prompt_text))


def _stored_config(config: ModelConfig) -> dict[str, Any]:
    """The resolved config a classifier keeps: without the judge prompt path (never read), with the files
    its templates came from."""
    stored = {key: value for key, value in config.as_json().items() if key != "prompt_path"}
    stored["prompt_files"] = [f"prompts/{PROMPTS_DIR.name}/{PROMPT_FILES[t]}" for t in StepType]
    return stored


def classifier_for_config(config_path: Path | str) -> StepTypeClassifier:
    """The StepTypeClassifier of a config file: found by classifier_id, created on first use."""
    return classifier_for_model_config(classifier_config(config_path))


def classifier_for_model_config(config: ModelConfig) -> StepTypeClassifier:
    """The StepTypeClassifier of a validated config with the prompt files as they are now. A row that
    exists keeps its identity and prompts, and takes the latest resolved config (only operational fields,
    e.g. base_url or concurrency, can differ under one id)."""
    prompt_text = _prompts_text({t.value: prompt_template(t) for t in StepType})
    classifier_id = classifier_id_of(config, prompt_text)
    defaults = {
        "model": config.model,
        "backend": config.backend,
        "config": _stored_config(config),
        "prompt_text": prompt_text,
        "prompt_sha256": prompt_sha256(prompt_text),
        "is_demo_model": config.is_demo_model,
    }
    try:
        with transaction.atomic():
            row, created = StepTypeClassifier.objects.get_or_create(
                classifier_id=classifier_id, defaults=defaults
            )
    except IntegrityError:  # created concurrently by another process
        row, created = StepTypeClassifier.objects.get(classifier_id=classifier_id), False
    if not created and row.config != defaults["config"]:
        row.config = defaults["config"]
        row.is_demo_model = row.is_demo_model or config.is_demo_model
        row.save(update_fields=["config", "is_demo_model"])
    return row


def config_for_classifier(classifier: StepTypeClassifier) -> ModelConfig:
    """The config a classifier runs with (its stored .config); ConfigError for an imported one."""
    label = f"step-type classifier {classifier.classifier_id}"
    if classifier.imported or not classifier.config:
        raise ConfigError(
            label,
            "config",
            "imported predictions have no model config to run; classify with a configured model",
        )
    data = {key: value for key, value in classifier.config.items() if key in CONFIG_FIELDS}
    return config_from_mapping(data, role="judge", source=label)


def templates_of(classifier: StepTypeClassifier) -> dict[StepType, str]:
    """The templates a classifier's jobs send: its stored text, checked against its prompt_sha256
    (PromptChanged otherwise); ValueError when the text is not the three templates."""
    label = f"step-type classifier {classifier.classifier_id}"
    text = check_prompt(classifier.prompt_text, expected_sha256=classifier.prompt_sha256, label=label)
    try:
        stored = json.loads(text)
    except ValueError:
        stored = None
    if not isinstance(stored, dict) or set(stored) != {t.value for t in StepType}:
        raise ValueError(f"{label}: prompt_text is not the three step-type templates (a JSON object by type)")
    return {StepType(name): str(template) for name, template in stored.items()}


def classify_request(config: ModelConfig, *, key: str, prompt: str) -> LLMRequest:
    """One yes/no question: the embedded model under a yes/no grammar, a json_schema config under the
    answer schema, any other model free (parse_answer reads its text)."""
    constraint = _output_constraint(config)
    stop = (
        () if config.backend == "vllm" and "stop" in config.vllm.get("sampling_kwargs", {}) else config.stop
    )
    return LLMRequest(
        key=key,
        prompt=prompt,
        max_tokens=config.max_new_tokens,
        temperature=config.temperature,
        stop=stop,
        grammar=YES_NO_GRAMMAR if constraint == "grammar:yes-no" else None,
        json_schema=ANSWER_SCHEMA if constraint == "json_schema:answer" else None,
    )


# --- jobs ----------------------------------------------------------------------------------------------


def _study_candidates(study: Study) -> list[StepCandidate]:
    """Every candidate of the procedures of the study's regular items (created on first use), by procedure
    and position."""
    procedures = list(
        Procedure.objects.filter(study_items__study=study, study_items__is_attention_check=False)
        .distinct()
        .order_by("pk")
        .only("pk", "steps")
    )
    ids = [procedure.pk for procedure in procedures]
    made = set(StepCandidate.objects.filter(procedure_id__in=ids).values_list("procedure_id", flat=True))
    for procedure in procedures:
        if procedure.pk not in made:  # not annotated yet: its candidates are made now
            procedure_candidates(procedure)
    return list(StepCandidate.objects.filter(procedure_id__in=ids).order_by("procedure_id", "position"))


def classify_job_create(
    *,
    classifier: StepTypeClassifier,
    study: Study,
    created_by: User | None = None,
    candidate_ids: Sequence[int] | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job asking `classifier` about every candidate of the study's procedures it has no prediction for
    (only those of `candidate_ids` when given). Enqueued once the surrounding transaction commits
    (enqueue=False: not at all). NothingToClassify when nothing is left; ConfigError for an imported
    classifier; PromptChanged when its stored prompts no longer match their hash."""
    if study.kind != StudyKind.STEP_TYPES:
        raise ValueError(f"study {study.slug!r} is a {study.kind} study, not a step-types study")
    config = config_for_classifier(classifier)  # fails now, not on the worker
    templates_of(classifier)
    candidates = _study_candidates(study)
    wanted = None if candidate_ids is None else set(candidate_ids)
    predicted = set(
        StepTypePrediction.objects.filter(
            classifier=classifier, candidate_id__in=[c.pk for c in candidates]
        ).values_list("candidate_id", flat=True)
    )
    items = [c.pk for c in candidates if c.pk not in predicted and (wanted is None or c.pk in wanted)]
    if not items:
        raise NothingToClassify(
            f"{classifier.model} ({classifier.classifier_id}) has a prediction for every candidate of "
            f"study {study.slug!r}{' asked for' if wanted is not None else ''}: nothing to classify"
        )
    parameters = {
        "classifier": classifier.pk,
        "classifier_id": classifier.classifier_id,
        "study": study.pk,
        "study_slug": study.slug,
        "backend": config.backend,
        "items": items,
        "failed_items": [],
        **({"retry_of": retry_of} if retry_of else {}),
    }
    return job_create(
        kind=CLASSIFY_STEPS,
        parameters=parameters,
        total=len(items),
        created_by=created_by,
        enqueue=enqueue,
    )


def classify_job_retry(job: Job, created_by: User | None) -> Job:
    """A new job over the candidates of `job` that failed (API or connection errors) and still have no
    prediction by its classifier."""
    classifier = StepTypeClassifier.objects.get(pk=job.parameters["classifier"])
    study = Study.objects.get(pk=job.parameters["study"])
    failed = set(job.parameters.get("failed_items", []))
    failed -= set(
        StepTypePrediction.objects.filter(classifier=classifier, candidate_id__in=failed).values_list(
            "candidate_id", flat=True
        )
    )
    if not failed:
        raise NothingToRetry(f"job {job.pk} has no failed items left to retry (they were classified since)")
    try:
        return classify_job_create(
            classifier=classifier,
            study=study,
            created_by=created_by,
            candidate_ids=sorted(failed),
            retry_of=job.pk,
        )
    except NothingToClassify as nothing:  # the candidates left the study since
        raise NothingToRetry(str(nothing)) from None


def classify_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a classify_steps job. `backend` is for callers that bring their own."""
    return job_run(job_id, CLASSIFY_STEPS, lambda job: ClassifyWork(job, backend))


class ClassifyWork(ItemWork):
    """One request per candidate (see the module doc)."""

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job)
        self.backend = backend
        self.classifier = StepTypeClassifier.objects.get(pk=job.parameters["classifier"])
        self.config = config_for_classifier(self.classifier)
        self.templates = templates_of(self.classifier)
        self.failed_items: set[int] = set(job.parameters.get("failed_items", []))

    def backend_config(self) -> BackendConfig:
        return self.config.backend_config()

    def pending_and_counts(self) -> tuple[list[int], Progress]:
        predicted = set(
            StepTypePrediction.objects.filter(
                classifier=self.classifier, candidate_id__in=self.items
            ).values_list("candidate_id", flat=True)
        )
        progress = Progress()
        pending = []
        for pk in self.items:
            if pk in predicted:
                progress.done += 1
            elif pk in self.failed_items:
                progress.failed += 1
            else:
                pending.append(pk)
        return pending, progress

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        rows = StepCandidate.objects.select_related("procedure").in_bulk(list(pks))
        requests = []
        for pk in self.present(pks, rows):
            row = rows[pk]
            try:
                candidate = Candidate.from_key(row.key)
                prompt = step_type_prompt(
                    candidate,
                    task=row.procedure.goal,
                    steps=[str(step) for step in row.procedure.steps],
                    template=self.templates[candidate.step_type],
                )
            except ValueError as exc:  # the procedure's steps changed under its candidates
                self.progress.failed += 1
                self.keep_error(f"item {pk}: {exc}")
                continue
            requests.append(classify_request(self.config, key=str(pk), prompt=prompt))
        return requests

    def store(self, results: Sequence[LLMResult]) -> None:
        predictions = []
        failed_before = len(self.failed_items)
        for result in results:
            pk = int(result.key)
            if not result.ok:
                self.failed_items.add(pk)
                continue
            text = result.text or ""
            predictions.append(
                StepTypePrediction(
                    classifier=self.classifier,
                    candidate_id=pk,
                    holds=parse_answer(text),
                    raw_output=text,
                    job_id=self.job.pk,
                )
            )
        with transaction.atomic():
            StepTypePrediction.objects.bulk_create(
                predictions,
                update_conflicts=True,
                unique_fields=["classifier", "candidate"],
                update_fields=["holds", "raw_output", "job", "updated_at"],
            )
            if len(self.failed_items) != failed_before:
                self.job.parameters = {**self.job.parameters, "failed_items": sorted(self.failed_items)}
                Job.objects.filter(pk=self.job.pk).update(parameters=self.job.parameters)
