"""Generator and judge rows from model configs (h2e_site/llm/config.py), with the reference's run identities.

generator_id / judge_id hash the config's identity fields and the prompt's text the way the reference `h2e`
CLI does (ids.py), so a run of the same model with the same settings gets the reference's id. Operational
fields (base_url, api_key_env, max_concurrency, request_timeout_s, max_attempts, json_schema) are not part of
the id, as in the reference; rate limits are part of generator_id only, as in the reference. A row made from
a config keeps the resolved config (`config`), the prompt's text (`prompt_text`, what its jobs send) and the
manifest the reference would write (`manifest`, exported verbatim by export_h2e) with the reference's backend
name; the row's `backend` field keeps ours.
"""

from __future__ import annotations

from typing import Any, TypeVar

from h2e_site.jobs.answer_kinds import AnswerKind
from h2e_site.llm.config import ConfigError, ModelConfig
from h2e_site.llm.prompts import check_prompt, prompt_sha256

from . import ids
from .job_kinds import GENERATE, JUDGE
from .models import Generator, Judge

Row = TypeVar("Row", Generator, Judge)


def generator_id_of(config: ModelConfig, prompt_text: str | None = None) -> str:
    """The reference's generator_id for this config and prompt text (the prompt file's, by default)."""
    return ids.generator_id(
        backend=config.id_backend,
        provider=config.provider,
        model=config.model,
        temperature=config.temperature,
        max_new_tokens=config.max_new_tokens,
        max_requests_per_minute=config.max_requests_per_minute,
        max_tokens_per_minute=config.max_tokens_per_minute,
        reasoning_effort=config.reasoning_effort,
        vllm_overrides=config.vllm,
        model_type=config.prompt_style,
        prompt_text=config.prompt_text() if prompt_text is None else prompt_text,
    )


def judge_id_of(config: ModelConfig, prompt_text: str | None = None) -> str:
    """The reference's judge_id for this config and prompt text (the prompt file's, by default)."""
    return ids.judge_id(
        backend=config.id_backend,
        provider=config.provider,
        model=config.model,
        temperature=config.temperature,
        max_new_tokens=config.max_new_tokens,
        reasoning_effort=config.reasoning_effort,
        vllm_overrides=config.vllm,
        prompt_text=config.prompt_text() if prompt_text is None else prompt_text,
    )


# --- rows ------------------------------------------------------------------------------------------------


def generator_for_config(config: ModelConfig) -> Generator:
    """The Generator row for this config: found by generator_id, created on first use."""
    if config.role != "generator":
        raise ValueError("generator_for_config needs a generator config")

    def more(generator_id: str) -> dict[str, Any]:
        return {
            **_decoding(config),
            "prompt_style": config.prompt_style,
            **_rate_limits(config),
            "prompt_path": config.prompt_path,
            "run_name": config.run_name or ids.run_name_for_model(config.model),
            "manifest": {
                "generator_id": generator_id,
                "generation_prompt_sha256": prompt_sha256(prompt),
                "generation_prompt_path": config.prompt_path,
                "generation": {"model_type": config.prompt_style},
                "generator": {**_manifest_role(config), **_rate_limits(config)},
            },
        }

    prompt = config.prompt_text()
    return GENERATION.row_for_config(config, prompt, more=more)


def judge_for_config(config: ModelConfig) -> Judge:
    """The Judge row for this config: found by judge_id, created on first use."""
    if config.role != "judge":
        raise ValueError("judge_for_config needs a judge config")

    def more(judge_id: str) -> dict[str, Any]:
        return {
            **_decoding(config),
            "prompt_path": config.prompt_path,
            "manifest": {
                "judge_id": judge_id,
                "judge_prompt_sha256": prompt_sha256(prompt),
                "judge_prompt_path": config.prompt_path,
                "judge": _manifest_role(config),
            },
        }

    prompt = config.prompt_text()
    return JUDGING.row_for_config(config, prompt, more=more)


def _decoding(config: ModelConfig) -> dict[str, Any]:
    """The row's fields of what the id hashes besides model and prompt."""
    return {
        "provider": config.provider,
        "temperature": config.temperature,
        "max_new_tokens": config.max_new_tokens,
        "reasoning_effort": config.reasoning_effort,
        "vllm_overrides": config.vllm,
    }


def _manifest_role(config: ModelConfig) -> dict[str, Any]:
    """The manifest's role block as the reference writes it: exactly the id payload (reference backend names),
    so an exported run's manifest reproduces its id. The row keeps our backend name in .backend."""
    return {
        "backend": config.id_backend,
        "provider": config.provider,
        "model": config.model,
        "temperature": config.temperature,
        "max_new_tokens": config.max_new_tokens,
        "reasoning_effort": config.reasoning_effort,
        "vllm_overrides": config.vllm,
    }


def _rate_limits(config: ModelConfig) -> dict[str, Any]:
    return {
        "max_requests_per_minute": config.max_requests_per_minute,
        "max_tokens_per_minute": config.max_tokens_per_minute,
    }


def config_for_generator(generator: Generator) -> ModelConfig:
    """The config a Generator row runs with (its stored .config); an imported row has none."""
    return GENERATION.config_of(generator)


def config_for_judge(judge: Judge) -> ModelConfig:
    return JUDGING.config_of(judge)


def prompt_for_generator(generator: Generator) -> str:
    """The generation prompt a generator's jobs send: the text stored when it was made, hashed into its
    generator_id. A row made before the text was stored reads its file, refused if the file changed since."""
    return _prompt_of(GENERATION, generator)


def prompt_for_judge(judge: Judge) -> str:
    """The judge prompt a judge's jobs send (as prompt_for_generator)."""
    return _prompt_of(JUDGING, judge)


def _prompt_of(answers: AnswerKind[Row, str], row: Row) -> str:
    label = answers.label_of(row)
    if row.prompt_text:
        return check_prompt(row.prompt_text, expected_sha256=row.prompt_sha256, label=label)
    config = answers.config_of(row)
    return check_prompt(
        config.prompt_text(), expected_sha256=row.prompt_sha256, label=label, path=config.prompt_path
    )


GENERATION = AnswerKind(
    GENERATE,
    Generator,
    role="generator",
    label="generator",
    refusal="this row was imported, not created from a config: generate with a generator made from a config "
    "(python manage.py generate --generator-config FILE; it gets its own generator_id)",
    id_of=generator_id_of,
    prompts=prompt_for_generator,
)
JUDGING = AnswerKind(
    JUDGE,
    Judge,
    role="judge",
    label="judge",
    refusal="this row was imported, not created from a config: attach a config to it in the admin (Judges, "
    "action “Attach a config…”: its prompt file must hash to the judge's recorded prompt_sha256, so the "
    "judge_id stays true), or judge with a judge made from a config (python manage.py judge --judge-config "
    "FILE; it gets its own judge_id)",
    id_of=judge_id_of,
    prompts=prompt_for_judge,
)


def judge_attach_config(*, judge: Judge, config: ModelConfig) -> Judge:
    """Let an imported judge run from the app: store `config` on it, refused (ConfigError naming the field)
    unless the config describes this judge - its prompt hashes to the judge's recorded prompt_sha256, and
    model and decoding are the judge's - so that the judge_id stays true of what the jobs send."""
    label = f"judge {judge.judge_id}"
    prompt = config.prompt_text()
    if judge.prompt_sha256 and prompt_sha256(prompt) != judge.prompt_sha256:
        raise ConfigError(
            label,
            "prompt_path",
            f"{config.prompt_path} hashes to {prompt_sha256(prompt)[:12]}…, the judge recorded "
            f"{judge.prompt_sha256[:12]}…: its judge_id would not describe the prompt sent",
        )
    for field, ours, theirs in _identity(judge, config):
        if theirs is not None and ours != theirs:
            raise ConfigError(label, field, f"the config says {ours!r}, the judge was run with {theirs!r}")
    judge.config, judge.prompt_text, judge.prompt_path = config.as_json(), prompt, config.prompt_path
    judge.backend = config.backend
    judge.save(update_fields=["config", "prompt_text", "prompt_path", "backend"])
    return judge


def _identity(judge: Judge, config: ModelConfig) -> list[tuple[str, Any, Any]]:
    """(field, the config's value, the judge's) for what the judge_id hashes besides the prompt."""
    return [
        ("model", config.model, judge.model),
        ("temperature", config.temperature, judge.temperature),
        ("max_new_tokens", config.max_new_tokens, judge.max_new_tokens),
        ("reasoning_effort", config.reasoning_effort, judge.reasoning_effort or None),
    ]
