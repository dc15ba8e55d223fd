"""Generator/judge YAML configs: validation naming file and field, ids as the reference computes them, one row
per config."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from h2e_site.llm.config import ConfigError, load_config
from judging.configs import (
    config_for_generator,
    config_for_judge,
    generator_for_config,
    generator_id_of,
    judge_for_config,
    judge_id_of,
)
from judging.models import Generator, Judge

CONFIGS = Path(settings.BASE_DIR) / "configs"
REFERENCE_GPT41_GENERATOR_ID = "0167f07a71c4"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("backend", ["openai", "deluge"])
def test_it_reproduces_the_reference_generator_id(tmp_path: Path, backend: str) -> None:
    path = _write(tmp_path, f"model: gpt-4.1\nbackend: {backend}\nprovider: openai\nprompt_style: inst\n")
    config = load_config(path, role="generator")
    assert config.backend == "openai"
    assert generator_id_of(config) == REFERENCE_GPT41_GENERATOR_ID
    assert generator_id_of(load_config(CONFIGS / "generators/gpt-4.1-openai.yaml", role="generator")) == (
        REFERENCE_GPT41_GENERATOR_ID
    )


@pytest.mark.parametrize("path", sorted((CONFIGS / "generators").glob("*.yaml")), ids=lambda p: p.name)
def test_it_loads_every_example_generator_config(path: Path) -> None:
    config = load_config(path, role="generator")
    assert len(generator_id_of(config)) == 12
    assert config.backend_config().model == config.model


@pytest.mark.parametrize("path", sorted((CONFIGS / "judges").glob("*.yaml")), ids=lambda p: p.name)
def test_it_loads_every_example_judge_config(path: Path) -> None:
    config = load_config(path, role="judge")
    assert len(judge_id_of(config)) == 12
    assert config.backend_config().mode == "chat"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("backend: openai\nprovider: openai\n", "model"),
        ("model: m\nbackend: deluge\n", "provider"),
        ("model: m\nbackend: ollama\n", "backend"),
        ("model: m\nbackend: vllm\nprompt_style: chat\n", "prompt_style"),
        ("model: m\nbackend: vllm\ntemperature: hot\n", "temperature"),
        ("model: m\nbackend: vllm\nmax_new_tokens: 0\n", "max_new_tokens"),
        ("model: m\nbackend: vllm\nvllm:\n  mode: stream\n", "vllm.mode"),
        ("model: m\nbackend: vllm\nvllm:\n  engine: {}\n", "vllm.engine"),
        ("model: m\nbackend: vllm\nvllm: [1]\n", "vllm"),
        ("model: m\nbackend: vllm\nmax_tokens: 5\n", "max_tokens"),
        ("model: m\nbackend: vllm\nprompt_path: nowhere.txt\n", "prompt_path"),
        ("- just a list\n", "(top level)"),
        ("model: [unclosed\n", "(file)"),
    ],
)
def test_it_names_the_file_and_field_of_a_bad_config(tmp_path: Path, text: str, field: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, role="generator")
    assert caught.value.field_name == field
    assert str(caught.value).startswith(f"{path}: {field}: ")


def test_it_refuses_a_base_prompt_for_a_judge(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="prompt_style"):
        load_config(_write(tmp_path, "model: m\nbackend: vllm\nprompt_style: base\n"), role="judge")


def test_it_overrides_base_url_from_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(CONFIGS / "judges/smollm2-local.yaml", role="judge")
    monkeypatch.delenv("H2E_LOCAL_LLM_URL", raising=False)
    assert config.backend_config().base_url == "http://127.0.0.1:8080/v1"
    monkeypatch.setenv("H2E_LOCAL_LLM_URL", "http://127.0.0.1:9999/v1")
    assert config.backend_config().base_url == "http://127.0.0.1:9999/v1"
    assert config.is_demo_model and config.json_schema


@pytest.mark.django_db
def test_it_maps_the_same_config_to_the_same_generator_row(tmp_path: Path) -> None:
    config = load_config(CONFIGS / "generators/gpt-4.1-openai.yaml", role="generator")
    first = generator_for_config(config)
    again = generator_for_config(load_config(CONFIGS / "generators/gpt-4.1-openai.yaml", role="generator"))
    assert first.pk == again.pk and Generator.objects.count() == 1
    assert first.generator_id == REFERENCE_GPT41_GENERATOR_ID
    assert first.prompt_path == "prompts/inference_inst.txt"
    assert first.backend == "openai" and first.provider == "openai" and first.prompt_style == "inst"
    assert config_for_generator(first) == config
    hotter = _write(tmp_path, "model: gpt-4.1\nprovider: openai\ntemperature: 0.7\n")
    assert generator_for_config(load_config(hotter, role="generator")).pk != first.pk


@pytest.mark.django_db
def test_it_maps_the_same_config_to_the_same_judge_row_and_marks_the_demo_model() -> None:
    config = load_config(CONFIGS / "judges/smollm2-local.yaml", role="judge")
    judge = judge_for_config(config)
    assert judge_for_config(config).pk == judge.pk and Judge.objects.count() == 1
    assert judge.is_demo_model
    assert judge.prompt_path == "prompts/judge.txt" and len(judge.prompt_sha256) == 64
    assert config_for_judge(judge) == config


@pytest.mark.django_db
def test_it_refuses_to_run_an_imported_row() -> None:
    judge = Judge.objects.create(judge_id="imported0001", model="m")
    with pytest.raises(ConfigError, match="imported"):
        config_for_judge(judge)


@pytest.mark.django_db
def test_it_gives_a_row_the_manifest_the_reference_writes() -> None:
    generator = generator_for_config(
        load_config(CONFIGS / "generators/gpt-4.1-openai.yaml", role="generator")
    )
    manifest = generator.manifest
    assert manifest["generator_id"] == REFERENCE_GPT41_GENERATOR_ID
    assert manifest["generation"] == {"model_type": "inst"}
    assert manifest["generator"] == {
        "backend": "deluge",
        "provider": "openai",
        "model": "gpt-4.1",
        "temperature": 0.0,
        "max_new_tokens": 4096,
        "max_requests_per_minute": 1000,
        "max_tokens_per_minute": 100000,
        "reasoning_effort": None,
        "vllm_overrides": {},
    }
    assert generator.backend == "openai"
    judge = judge_for_config(load_config(CONFIGS / "judges/how2judge-vllm.yaml", role="judge"))
    assert judge.manifest["judge"]["vllm_overrides"] == {"chat_template_kwargs": {"enable_thinking": False}}
    assert judge.manifest["judge"]["provider"] == "local"
