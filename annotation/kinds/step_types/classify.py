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
  is sent. h2e_site.jobs.answering owns pending and failed items, retry, cost and latency; this module says
  which candidates, what to ask and what to store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Study
from annotation.kinds.step_types.candidates import Candidate, StepType
from annotation.kinds.step_types.llm import (
    PROMPT_FILES,
    PROMPTS_DIR,
    parse_answer,
    prompt_template,
    step_type_prompt,
)
from annotation.kinds.step_types.models import StepCandidate, StepTypeClassifier, StepTypePrediction
from annotation.kinds.step_types.name import KIND
from annotation.kinds.step_types.spec import procedure_candidates
from h2e_site.jobs import answering
from h2e_site.jobs.answer_kinds import AnswerKind, ConfiguredWork, hashed_model_id
from h2e_site.jobs.models import Job
from h2e_site.llm.base import LLMRequest, LLMResult
from h2e_site.llm.config import ModelConfig
from mining.models import Procedure

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


class NothingToClassify(answering.NothingToAsk):
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
    prompts = f"{PROMPTS_DIR.name}/*.txt (one per type)"
    return answering.config_without_prompt_path(
        config_path, role="judge", used_for="step types", prompts=prompts
    )


def classifier_id_of(config: ModelConfig, prompt_text: str) -> str:
    """h2e_site.llm.config.hashed_id over the model's identity (as judge_id's fields, plus the output
    constraint) and the SHA-256 of each prompt template."""
    output = answering.output_constraint(config, "yes-no")
    return hashed_model_id(
        config, prompt_text, name="classifier", version=CLASSIFIER_ID_VERSION, output=output
    )


def classifier_for_config(config_path: Path | str) -> StepTypeClassifier:
    """The StepTypeClassifier of a config file: found by classifier_id, created on first use."""
    return classifier_for_model_config(classifier_config(config_path))


def classifier_for_model_config(config: ModelConfig) -> StepTypeClassifier:
    """The StepTypeClassifier of a validated config with the prompt files as they are now (see
    answering.model_row_for_config); it keeps the config without the judge prompt path (never read) and
    with the files its templates came from."""
    stored = {key: value for key, value in config.as_json().items() if key != "prompt_path"}
    stored["prompt_files"] = [f"prompts/{PROMPTS_DIR.name}/{PROMPT_FILES[t]}" for t in StepType]
    prompt_text = answering.prompts_json({t.value: prompt_template(t) for t in StepType})
    return STEP_TYPE_CLASSIFICATION.row_for_config(config, prompt_text, stored_config=stored)


def config_for_classifier(classifier: StepTypeClassifier) -> ModelConfig:
    """The config a classifier runs with (its stored .config); ConfigError for an imported one."""
    return STEP_TYPE_CLASSIFICATION.config_of(classifier)


def templates_of(classifier: StepTypeClassifier) -> dict[StepType, str]:
    """The templates a classifier's jobs send: its stored text, checked against its prompt_sha256
    (PromptChanged otherwise); ValueError when the text is not the three templates."""
    label = STEP_TYPE_CLASSIFICATION.label_of(classifier)
    what = "the three step-type templates"
    stored = answering.stored_prompts(
        classifier.prompt_text, expected_sha256=classifier.prompt_sha256, label=label, what=what
    )
    if set(stored) != {t.value for t in StepType}:
        raise ValueError(f"{label}: prompt_text is not {what} (a JSON object by type)")
    return {StepType(name): template for name, template in stored.items()}


STEP_TYPE_CLASSIFICATION = AnswerKind(
    CLASSIFY_STEPS,
    StepTypeClassifier,
    role="judge",
    label="step-type classifier",
    refusal="imported predictions have no model config to run; classify with a configured model",
    id_of=classifier_id_of,
    prompts=templates_of,
)


def classify_request(config: ModelConfig, *, key: str, prompt: str) -> LLMRequest:
    """One yes/no question: the embedded model under a yes/no grammar, a json_schema config under the
    answer schema, any other model free (parse_answer reads its text)."""
    return answering.constrained_request(
        config, key=key, prompt=prompt, grammar=YES_NO_GRAMMAR, schema=ANSWER_SCHEMA
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


def _predicted(classifier: StepTypeClassifier, pks: Sequence[int]) -> set[int]:
    rows = StepTypePrediction.objects.filter(classifier=classifier, candidate_id__in=list(pks))
    return set(rows.values_list("candidate_id", flat=True))


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
    if study.kind != KIND:
        raise ValueError(f"study {study.slug!r} is a {study.kind} study, not a step-types study")
    config = STEP_TYPE_CLASSIFICATION.checked_config(classifier)  # fails now, not on the worker
    candidates = _study_candidates(study)
    wanted = None if candidate_ids is None else set(candidate_ids)
    predicted = _predicted(classifier, [c.pk for c in candidates])
    items = [c.pk for c in candidates if c.pk not in predicted and (wanted is None or c.pk in wanted)]
    if not items:
        raise NothingToClassify(
            f"{classifier.model} ({classifier.classifier_id}) has a prediction for every candidate of "
            f"study {study.slug!r}{' asked for' if wanted is not None else ''}: nothing to classify"
        )
    parameters = {"study": study.pk, "study_slug": study.slug}
    return STEP_TYPE_CLASSIFICATION.job_create(
        classifier, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
    )


class ClassifyWork(ConfiguredWork[StepTypeClassifier, dict[StepType, str]]):
    """One request per candidate (see the module doc): the job's classifier (self.row), its templates
    (self.prompts)."""

    answers = STEP_TYPE_CLASSIFICATION
    answered_verb = "classified"

    def answered(self, pks: Sequence[int]) -> set[int]:
        return _predicted(self.row, pks)

    def rows(self, pks: Sequence[int]) -> Mapping[int, StepCandidate]:
        return StepCandidate.objects.select_related("procedure").in_bulk(list(pks))

    def request(self, pk: int, row: StepCandidate) -> LLMRequest:
        candidate = Candidate.from_key(row.key)  # ValueError: the procedure's steps changed under it
        prompt = step_type_prompt(
            candidate,
            task=row.procedure.goal,
            steps=[str(step) for step in row.procedure.steps],
            template=self.prompts[candidate.step_type],
        )
        return classify_request(self.config, key=str(pk), prompt=prompt)

    def save(self, results: Sequence[LLMResult]) -> None:
        predictions = [
            StepTypePrediction(
                classifier=self.row,
                candidate_id=int(result.key),
                holds=parse_answer(result.text or ""),
                raw_output=result.text or "",
                job_id=self.job.pk,
            )
            for result in results
            if result.ok
        ]
        StepTypePrediction.objects.bulk_create(
            predictions,
            update_conflicts=True,
            unique_fields=["classifier", "candidate"],
            update_fields=["holds", "raw_output", "job", "updated_at"],
        )

    def again(self, pks: list[int], created_by: User | None) -> Job:
        study = Study.objects.get(pk=self.job.parameters["study"])
        return classify_job_create(
            classifier=self.row,
            study=study,
            created_by=created_by,
            candidate_ids=pks,
            retry_of=self.job.pk,
        )


classify_job_retry = ClassifyWork.retry  # a new job over the failed candidates still without a prediction
classify_job_run = ClassifyWork.run_job  # run (or resume) a classify_steps job
