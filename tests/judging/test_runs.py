"""Generate and judge jobs run in-process against the loopback OpenAI-compatible server (real HTTP).

The services are called as the Celery tasks call them (generate_job_run / judge_job_run with a job id); the
backend is the real OpenAI-compatible one, built from the stored config. A worker process runs them in
test_worker_flow.py and test_worker_sigkill.py.
"""

from __future__ import annotations

import datetime
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from h2e_site.jobs import locks
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import (
    job_cancel,
    job_queue,
    job_retry_failed,
    job_seconds_remaining,
    resume_orphaned_jobs,
)
from h2e_site.llm.config import config_from_mapping, load_config
from judging import selectors
from judging.configs import generator_for_config, judge_for_config
from judging.generate_jobs import generate_job_create, generate_job_run
from judging.judge_jobs import judge_job_create, judge_job_run
from judging.models import CriticalFailure, Generation, Generator, Judge, JudgeError, Judgment
from tests.factories import make_generation, make_generator, make_judgment, make_procedure
from tests.llm_server import (
    MALFORMED_JSON,
    MISSING_CRITICAL_FAILURES,
    OUT_OF_RANGE_STEPS,
    Fail,
    LoopbackLLM,
    failure,
    fenced,
    in_prose,
    judge_json,
)

pytestmark = pytest.mark.django_db
CONFIGS = Path(settings.BASE_DIR) / "configs"


def _config(server: LoopbackLLM, **extra: Any) -> dict[str, Any]:
    return {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": server.base_url,
        "max_concurrency": 4,
        "max_attempts": 3,
        "request_timeout_s": 10,
        "max_requests_per_minute": 100_000,
        "max_tokens_per_minute": 100_000_000,  # the reference's default (100k) would pace these tests
        **extra,
    }


def loopback_judge(server: LoopbackLLM, **extra: Any) -> Judge:
    return judge_for_config(config_from_mapping(_config(server, **extra), role="judge"))


def loopback_generator(server: LoopbackLLM, **extra: Any) -> Generator:
    return generator_for_config(config_from_mapping(_config(server, **extra), role="generator"))


def _prompt(body: dict[str, Any]) -> str:
    return body.get("prompt") or body["messages"][0]["content"]


def answer_by_goal(answers: dict[str, str]) -> Any:
    """A responder picking the answer by which goal the prompt is about (any request order)."""

    def respond(body: dict[str, Any]) -> str:
        prompt = _prompt(body)
        for goal, text in answers.items():
            if f"Goal:\n{goal}\n" in prompt:
                return text
        return judge_json()

    return respond


def generations_to_judge(n: int) -> Generator:
    generator = make_generator()
    for i in range(n):
        make_generation(generator=generator, procedure=make_procedure(goal=f"Goal {i}"))
    return generator


# --- generation -----------------------------------------------------------------------------------------


def test_it_generates_l2_for_each_procedure_and_keeps_the_raw_completion(llm_server: LoopbackLLM) -> None:
    procedures = [make_procedure(goal=f"Make tea {i}", steps=["Boil", "Steep", "Pour"]) for i in range(3)]
    make_procedure(goal="In another split", split="train")
    llm_server.responder = lambda body: "Sure:\n1. Boil water.\n2. Steep the tea.\n3. Pour it."
    generator = loopback_generator(llm_server)
    job = generate_job_create(generator=generator, split="bench")
    assert job.total == 3 and job.parameters["items"] == [p.pk for p in procedures]

    job = generate_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 3, 0)
    assert job.started_at is not None and job.finished_at is not None
    generations = list(Generation.objects.filter(generator=generator).order_by("procedure_id"))
    assert [g.procedure_id for g in generations] == [p.pk for p in procedures]
    first = generations[0]
    assert first.model_completion == "Sure:\n1. Boil water.\n2. Steep the tea.\n3. Pour it."
    assert first.predicted_steps == ["Boil water.", "Steep the tea.", "Pour it."]
    assert "Goal:\nMake tea 0\n" in first.prompt and "return exactly 3 steps" in first.prompt
    assert first.attempts == 1 and first.error == ""
    assert first.n_tokens and first.n_tokens > 0 and first.step_count_mismatch is False
    sent = [r.body for r in llm_server.completion_requests]
    assert [{"role": "user", "content": first.prompt}] in [body["messages"] for body in sent]
    assert {body["temperature"] for body in sent} == {0.0}


def test_it_generates_only_what_is_missing_up_to_the_limit(llm_server: LoopbackLLM) -> None:
    generator = loopback_generator(llm_server)
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(4)]
    make_generation(generator=generator, procedure=procedures[0])
    job = generate_job_create(generator=generator, limit=2)
    assert job.parameters["items"] == [procedures[1].pk, procedures[2].pk]
    generate_job_run(job_id=job.pk)
    assert len(llm_server.completion_requests) == 2


def test_it_records_a_permanent_generation_error_and_retries_it_later(llm_server: LoopbackLLM) -> None:
    generator = loopback_generator(llm_server)
    procedure = make_procedure()
    llm_server.responder = lambda body: "1. Water it.\n2. Lift it out.\n3. Replant it."
    llm_server.script(Fail(400, message="bad request"))
    job = generate_job_run(job_id=generate_job_create(generator=generator).pk)
    # every item failed: the job failed (issue #11: not a green "Succeeded")
    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.FAILED, 0, 1)
    assert "1 item(s) failed" in job.error
    generation = Generation.objects.get(generator=generator, procedure=procedure)
    assert "bad request" in generation.error and generation.predicted_steps == []

    retry = job_retry_failed(job=job)
    assert retry.parameters["items"] == [procedure.pk]
    retry = generate_job_run(job_id=retry.pk)
    assert retry is not None and (retry.done, retry.failed) == (1, 0)
    generation.refresh_from_db()
    assert generation.error == "" and len(generation.predicted_steps) == 3


# --- judging --------------------------------------------------------------------------------------------


def test_it_judges_and_stores_what_each_kind_of_output_means(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(6)
    llm_server.responder = answer_by_goal(
        {
            "Goal 0": fenced(judge_json([failure("Skips watering.", l1=[1], l2=[2])])),
            "Goal 1": in_prose(judge_json()),
            "Goal 2": MALFORMED_JSON,
            "Goal 3": OUT_OF_RANGE_STEPS,
            "Goal 4": MISSING_CRITICAL_FAILURES,
            "Goal 5": "<think>Hmm {maybe}</think>" + judge_json([failure(l1=["L1.2"], l2=["step 3"])]),
        }
    )
    judge = loopback_judge(llm_server)
    job = judge_job_run(job_id=judge_job_create(judge=judge, generator=generator).pk)

    assert job is not None and (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, 6, 6, 0)
    by_goal = {
        j.generation.procedure.goal: j for j in Judgment.objects.select_related("generation__procedure")
    }
    assert len(by_goal) == 6
    fenced_one = by_goal["Goal 0"]
    assert (fenced_one.parse_failed, fenced_one.n_failures, fenced_one.has_failure) == (False, 1, True)
    assert fenced_one.raw_output.startswith("```json")
    assert fenced_one.failures.get().description == "Skips watering."
    assert fenced_one.generator_id == generator.pk
    assert fenced_one.topic_id == fenced_one.generation.procedure.topic_id is not None
    assert fenced_one.procedure_id == fenced_one.generation.procedure_id
    assert (by_goal["Goal 1"].parse_failed, by_goal["Goal 1"].has_failure) == (False, False)
    for goal in ("Goal 2", "Goal 4"):
        assert (by_goal[goal].parse_failed, by_goal[goal].has_failure) == (True, True)
        assert by_goal[goal].raw_output  # kept even when unparseable
    out_of_range = by_goal["Goal 3"].failures.get()
    assert (out_of_range.l1_steps, out_of_range.l2_steps, out_of_range.steps_out_of_range) == (
        [99],
        [0],
        True,
    )
    thinking = by_goal["Goal 5"].failures.get()
    assert (thinking.l1_steps, thinking.l2_steps, thinking.steps_out_of_range) == ([2], [3], False)
    prompt = _prompt(llm_server.completion_requests[0].body)
    assert (
        prompt.endswith("\n\nReturn only valid json.") and "Resources" not in prompt.split("# Input data")[1]
    )


def test_it_retries_server_errors_until_the_answer_comes(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(1)
    llm_server.script(Fail(500, retry_after="0"), Fail(503, retry_after="0"))
    job = judge_job_run(job_id=judge_job_create(judge=loopback_judge(llm_server), generator=generator).pk)
    assert job is not None and (job.done, job.failed) == (1, 0)
    judgment = Judgment.objects.get()
    assert (judgment.attempts, judgment.parse_failed) == (3, False)
    assert not JudgeError.objects.exists()


def test_a_permanent_error_is_a_failed_item_never_a_judgment_and_is_retried(
    llm_server: LoopbackLLM,
) -> None:
    generator = generations_to_judge(3)
    judge = loopback_judge(llm_server, max_concurrency=1)
    llm_server.script(Fail(400, message="context too long"))
    job = judge_job_run(job_id=judge_job_create(judge=judge, generator=generator).pk)
    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 2, 1)
    errored = JudgeError.objects.get()
    assert "context too long" in errored.error and errored.job_id == job.pk
    assert not Judgment.objects.filter(generation=errored.generation).exists()
    assert Judgment.objects.count() == 2
    score = selectors.how2score_for(generator_pk=generator.pk, judge_pk=judge.pk)
    assert (score.total, score.n_parse_failed) == (2, 0)  # not a parse failure, not in the strict score

    again = job_retry_failed(job=job)
    assert again.parameters["items"] == [errored.generation_id]
    again = judge_job_run(job_id=again.pk)
    assert again is not None and (again.done, again.failed) == (1, 0)
    assert not JudgeError.objects.exists()
    assert Judgment.objects.count() == 3


def test_it_replaces_old_judgments_in_place(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(2)
    judge = loopback_judge(llm_server)
    for generation in generator.generations.all():
        make_judgment(generation=generation, judge=judge, failures=[("Old failure.", [1], [1])])
    assert judge_job_create(judge=judge, generator=generator).total == 0  # mode missing: nothing to do
    job = judge_job_run(job_id=judge_job_create(judge=judge, generator=generator, mode="replace").pk)
    assert job is not None and (job.done, job.failed) == (2, 0)
    assert Judgment.objects.count() == 2
    assert not CriticalFailure.objects.filter(description="Old failure.").exists()
    assert set(Judgment.objects.values_list("n_failures", flat=True)) == {0}


def test_it_keeps_a_good_judgment_when_its_replacement_fails(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(1)
    judge = loopback_judge(llm_server)
    old = make_judgment(generation=generator.generations.get(), judge=judge, failures=[("Kept.", [1], [1])])
    llm_server.script(Fail(400))
    job = judge_job_run(job_id=judge_job_create(judge=judge, generator=generator, mode="replace").pk)
    assert job is not None and job.failed == 1
    old.refresh_from_db()
    assert (old.parse_failed, old.n_failures) == (False, 1)
    assert JudgeError.objects.get().job_id == job.pk


def test_it_resumes_a_crashed_job_without_judging_anything_twice(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(5)
    judge = loopback_judge(llm_server)
    job = judge_job_create(judge=judge, generator=generator, mode="replace")
    # The crashed run: it started, wrote two judgments (one an API error), then its worker died.
    started = timezone.now() - datetime.timedelta(seconds=5)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=started, done=1)
    generations = list(generator.generations.order_by("pk"))
    make_judgment(generation=generations[0], judge=judge)
    JudgeError.objects.create(judge=judge, generation=generations[1], job=job, error="HTTP 400")

    job = judge_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, 5, 4, 1)
    assert job.started_at == started
    assert len(llm_server.completion_requests) == 3
    assert Judgment.objects.count() == 4 and JudgeError.objects.count() == 1


def test_it_does_not_run_a_finished_job_again(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(2)
    job = judge_job_create(judge=loopback_judge(llm_server), generator=generator)
    judge_job_run(job_id=job.pk)
    judge_job_run(job_id=job.pk)
    assert len(llm_server.completion_requests) == 2
    assert Judgment.objects.count() == 2


def test_it_estimates_the_time_left_from_the_rate_so_far() -> None:
    now = timezone.now()
    job = Job(
        status=JobStatus.RUNNING,
        total=100,
        done=20,
        failed=5,
        started_at=now - datetime.timedelta(seconds=50),
    )
    assert job_seconds_remaining(job, now=now) == pytest.approx(150.0)
    job.status = JobStatus.SUCCEEDED
    assert job_seconds_remaining(job, now=now) is None


def test_it_refuses_unknown_modes_and_empty_selections(llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    with pytest.raises(ValueError, match="mode"):
        judge_job_create(judge=judge, generation_ids=[], mode="everything")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="generator or generation_ids"):
        judge_job_create(judge=judge)


@pytest.mark.django_db(transaction=True)
def test_it_stops_a_cancelled_job(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(40)
    judge = loopback_judge(llm_server, max_concurrency=2)
    job = judge_job_create(judge=judge, generator=generator, enqueue=False)  # committed: no worker here
    llm_server.latency = 0.1
    cancelled = threading.Event()

    def respond(body: dict[str, Any]) -> str:
        if len(llm_server.completion_requests) >= 6 and not cancelled.is_set():
            cancelled.set()
            job_cancel(job=Job.objects.get(pk=job.pk))
            connection.close()  # this server thread's own connection
        return judge_json()

    llm_server.responder = respond
    result = judge_job_run(job_id=job.pk)

    assert result is not None and result.status == JobStatus.CANCELLED
    assert result.finished_at is not None
    judged = Judgment.objects.count()
    assert 6 <= judged < 40
    assert result.done == judged
    # Within a second of cancelling it stops starting requests (2 in flight, 0.1 s each).
    assert len(llm_server.completion_requests) <= 6 + 2 * 12
    json.dumps(result.parameters)  # stays JSON


def test_it_sends_vllm_jobs_to_the_gpu_queue(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(1)
    vllm_judge = judge_for_config(load_config(CONFIGS / "judges/how2judge-vllm.yaml", role="judge"))
    assert job_queue(judge_job_create(judge=vllm_judge, generator=generator)) == "gpu"
    assert job_queue(judge_job_create(judge=loopback_judge(llm_server), generator=generator)) == "default"


def test_it_counts_an_item_deleted_before_its_turn_as_failed(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(3)
    job = judge_job_create(judge=loopback_judge(llm_server), generator=generator)
    generator.generations.order_by("pk").first().delete()  # type: ignore[union-attr]
    job = judge_job_run(job_id=job.pk)
    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 2, 1)
    assert "deleted before it was run" in job.error


def test_the_commands_create_jobs_and_name_the_bad_config_field(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    generator = generations_to_judge(2)
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(_config(llm_server)), encoding="utf-8")
    out = io.StringIO()
    call_command("judge", "--judge-config", str(config), "--generator", generator.generator_id, stdout=out)
    job = Job.objects.get()
    assert out.getvalue().startswith(f"job {job.pk}: judge {generator.generator_id} with loopback-model")
    assert (job.kind, job.total, job.parameters["mode"]) == ("judge", 2, "missing")
    call_command("judge", "--judge-config", str(config), "--generator", str(generator.pk), "--replace")
    assert Job.objects.filter(parameters__mode="replace").count() == 1

    bad = tmp_path / "bad.yaml"
    bad.write_text("model: m\nbackend: deluge\n", encoding="utf-8")
    with pytest.raises(CommandError, match=f"{bad}: provider: "):
        call_command("generate", "--generator-config", str(bad))
    with pytest.raises(CommandError, match="no generator 'nope'"):
        call_command("judge", "--judge-config", str(config), "--generator", "nope")


def test_it_leaves_a_job_another_runner_holds(llm_server: LoopbackLLM) -> None:
    generator = generations_to_judge(2)
    job = judge_job_create(judge=loopback_judge(llm_server), generator=generator)
    other = connection.copy()  # another session, as another worker's would be
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [locks.ADVISORY_LOCK_CLASS, job.pk])
            assert cursor.fetchone()[0]
        assert judge_job_run(job_id=job.pk) is None
        assert resume_orphaned_jobs() == []  # queued, not running: nothing to resume either
    finally:
        other.close()
    assert llm_server.completion_requests == []
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
