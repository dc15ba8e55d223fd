"""The prompt that is hashed is the prompt that is sent: a Generator / Judge keeps the text its id was hashed
from, its jobs send that text, and a row whose stored text is missing refuses to run on an edited file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from h2e_site.jobs.models import JobStatus
from h2e_site.llm.config import config_from_mapping
from h2e_site.llm.prompts import PromptChanged, prompt_sha256
from judging.configs import generator_for_config, judge_for_config, prompt_for_judge
from judging.generate_jobs import generate_job_create, generate_job_run
from judging.judge_jobs import judge_job_create, judge_job_run
from judging.models import Judge, Judgment
from tests.factories import make_generation, make_generator, make_procedure
from tests.llm_server import LoopbackLLM, judge_json

pytestmark = pytest.mark.django_db
PROMPTS = Path(settings.BASE_DIR) / "prompts"
MARKER = "EDITED AFTER THE JUDGE WAS MADE"


def _config(server: LoopbackLLM, prompt: Path) -> dict[str, Any]:
    return {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": server.base_url,
        "prompt_path": str(prompt),
        "max_attempts": 1,
        "max_requests_per_minute": 100_000,
        "max_tokens_per_minute": 100_000_000,
    }


def _sent(server: LoopbackLLM) -> list[str]:
    return [r.body.get("prompt") or r.body["messages"][0]["content"] for r in server.completion_requests]


def _edit(path: Path) -> None:
    path.write_text(MARKER + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")


def test_it_sends_the_judge_prompt_it_was_created_with_after_the_file_changes(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    prompt = tmp_path / "judge.txt"
    shutil.copy(PROMPTS / "judge.txt", prompt)
    judge = judge_for_config(config_from_mapping(_config(llm_server, prompt), role="judge"))
    original = prompt.read_text(encoding="utf-8")
    assert judge.prompt_text == original and judge.prompt_sha256 == prompt_sha256(original)
    generation = make_generation(generator=make_generator(), procedure=make_procedure(goal="Make tea"))
    job = judge_job_create(judge=judge, generation_ids=[generation.pk], enqueue=False)

    _edit(prompt)  # e.g. someone edits the prompt, or a GPU worker has another copy
    llm_server.responder = lambda body: judge_json()
    finished = judge_job_run(job_id=job.pk)

    assert finished is not None and finished.status == JobStatus.SUCCEEDED
    (sent,) = _sent(llm_server)
    assert MARKER not in sent and sent.startswith(original.split("{goal}")[0])
    assert Judgment.objects.get(generation=generation).judge.judge_id == judge.judge_id
    # the edited file is another prompt: a config naming it makes another judge, with another id
    edited = judge_for_config(config_from_mapping(_config(llm_server, prompt), role="judge"))
    assert edited.judge_id != judge.judge_id and MARKER in edited.prompt_text


def test_it_sends_the_generation_prompt_it_was_created_with(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    prompt = tmp_path / "inference_inst.txt"
    shutil.copy(PROMPTS / "inference_inst.txt", prompt)
    generator = generator_for_config(config_from_mapping(_config(llm_server, prompt), role="generator"))
    make_procedure(goal="Make tea", steps=["Boil", "Steep"])
    job = generate_job_create(generator=generator, enqueue=False)

    _edit(prompt)
    llm_server.responder = lambda body: "1. Boil.\n2. Steep."
    finished = generate_job_run(job_id=job.pk)

    assert finished is not None and finished.status == JobStatus.SUCCEEDED and finished.done == 1
    assert all(MARKER not in sent for sent in _sent(llm_server)) and _sent(llm_server)


def _legacy_judge(server: LoopbackLLM, prompt: Path) -> Judge:
    """A judge made before rows kept their prompt text (only its hash and the file's path)."""
    judge = judge_for_config(config_from_mapping(_config(server, prompt), role="judge"))
    Judge.objects.filter(pk=judge.pk).update(prompt_text="")
    judge.refresh_from_db()
    return judge


def test_it_fails_a_job_whose_prompt_file_changed_under_a_row_without_its_text(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    prompt = tmp_path / "judge.txt"
    shutil.copy(PROMPTS / "judge.txt", prompt)
    judge = _legacy_judge(llm_server, prompt)
    generation = make_generation(generator=make_generator(), procedure=make_procedure())
    job = judge_job_create(judge=judge, generation_ids=[generation.pk], enqueue=False)

    _edit(prompt)
    with pytest.raises(PromptChanged):
        judge_job_run(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "prompt file" in job.error and str(prompt) in job.error and judge.judge_id in job.error
    assert llm_server.completion_requests == [] and not Judgment.objects.exists()


def test_it_refuses_to_create_a_job_for_a_row_whose_prompt_file_changed(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    prompt = tmp_path / "judge.txt"
    shutil.copy(PROMPTS / "judge.txt", prompt)
    judge = _legacy_judge(llm_server, prompt)
    assert prompt_for_judge(judge) == prompt.read_text(encoding="utf-8")  # unchanged: still runs
    _edit(prompt)
    generation = make_generation(generator=make_generator(), procedure=make_procedure())
    with pytest.raises(PromptChanged, match="has changed since it was created"):
        judge_job_create(judge=judge, generation_ids=[generation.pk], enqueue=False)
