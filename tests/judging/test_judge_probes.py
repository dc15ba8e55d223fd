"""Judge probe jobs (judging/probes/jobs.py) end to end against the loopback OpenAI-compatible server (real
HTTP, scripted answers): a judge that finds a failure whenever a step is missing detects every deleted step;
a length-biased judge gains How2Score from verbose rewrites; the stored judgment of an original is reused;
the perturbed L2 never becomes a Generation or a Judgment; the refusals name their field; the pages, the
form and the report card's section (staff only); the command."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from h2e_site.inputs import BadInput
from h2e_site.jobs.models import JobStatus
from h2e_site.llm.config import config_from_mapping
from judging.configs import judge_for_config
from judging.models import Generation, Generator, Judge, JudgeProbe, Judgment
from judging.probes.jobs import judge_probe_create, judge_probe_job_run
from judging.probes.results import probe_results
from tests.factories import make_generation, make_generator, make_judgment, make_procedure
from tests.llm_server import LoopbackLLM, failure, judge_json

pytestmark = pytest.mark.django_db

L1 = ["Fill the kettle", "Boil the water", "Put the tea bag in a cup", "Pour the water", "Wait three minutes"]
SERVER_CONFIG = {
    "model": "loopback-model",
    "backend": "openai",
    "provider": "loopback",
    "max_concurrency": 4,
    "max_attempts": 1,
    "request_timeout_s": 10,
    "max_requests_per_minute": 100_000,
    "max_tokens_per_minute": 100_000_000,
}


def loopback_judge(server: LoopbackLLM) -> Judge:
    return judge_for_config(config_from_mapping({**SERVER_CONFIG, "base_url": server.base_url}, role="judge"))


def rewriter_file(server: LoopbackLLM, tmp_path: Path) -> Path:
    path = tmp_path / "rewriter.yaml"
    path.write_text(yaml.safe_dump({**SERVER_CONFIG, "base_url": server.base_url}), encoding="utf-8")
    return path


def generations(n: int) -> tuple[Generator, list[Generation]]:
    """n goals, each with an L2 that has every step of its L1 (5 steps)."""
    generator = make_generator(generator_id="probed")
    rows = [
        make_generation(
            generator=generator, procedure=make_procedure(goal=f"Make tea {i}", steps=L1), predicted_steps=L1
        )
        for i in range(n)
    ]
    return generator, rows


def prompt_of(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"]


def l2_of(prompt: str) -> list[str]:
    """The L2 steps shown to the judge (between "L2:" and the output format)."""
    block = prompt.rsplit("\nL2:\n", 1)[1].split("\n\n", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines() if line.strip()]


def misses_a_step(body: dict[str, Any]) -> str:
    """A judge that finds a critical failure for each step of the L1 that no L2 step starts with."""
    steps = l2_of(prompt_of(body))
    missing = [step for step in L1 if not any(shown.startswith(step) for shown in steps)]
    return judge_json([failure(f"Skips: {step}") for step in missing])


def test_a_judge_that_sees_a_missing_step_detects_every_deletion(llm_server: LoopbackLLM) -> None:
    llm_server.responder = misses_a_step
    judge = loopback_judge(llm_server)
    generator, rows = generations(6)
    stored = make_judgment(generation=rows[0], judge=judge)  # this original is not asked again
    n_generations, n_judgments = Generation.objects.count(), Judgment.objects.count()

    probe = judge_probe_create(judge=judge, generator=generator, kind="delete_step", n=6, seed=3)
    assert probe.job is not None and probe.job.total == 6
    job = judge_probe_job_run(job_id=probe.job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 6, 0)
    assert len(llm_server.completion_requests) == 6 + 5  # every perturbed L2, and 5 originals
    result = probe_results(probe)
    assert result.detection is not None and (result.detection.k, result.detection.n) == (6, 6)
    assert result.detection.rate == 1.0 and result.detection.interval[0] > 0.6
    items = list(probe.items.all())
    reused = next(item for item in items if item.generation_id == rows[0].pk)
    assert reused.original_judgment_id == stored.pk and reused.original_n_failures == 0
    for item in items:
        k = item.perturbation["deleted_step"]
        assert item.perturbed_steps == [s for i, s in enumerate(L1, 1) if i != k]
        assert (
            item.perturbed_n_failures == 1 and item.perturbed_failures[0]["failure"] == f"Skips: {L1[k - 1]}"
        )
        assert item.perturbed_tokens < item.original_tokens
    # No perturbed L2 became a generation or a judgment: only the 5 originals were judged and stored.
    assert Generation.objects.count() == n_generations
    assert Judgment.objects.count() == n_judgments + 5
    assert not Judgment.objects.filter(n_failures__gt=0).exists()


def test_swapped_steps_are_judged_in_their_new_order(llm_server: LoopbackLLM) -> None:
    def out_of_order(body: dict[str, Any]) -> str:
        return judge_json([] if l2_of(prompt_of(body)) == L1 else [failure("Steps out of order.")])

    llm_server.responder = out_of_order
    judge = loopback_judge(llm_server)
    generator, _ = generations(4)
    probe = judge_probe_create(judge=judge, generator=generator, kind="swap_steps", n=4, seed=0)
    judge_probe_job_run(job_id=probe.job_id)
    result = probe_results(probe)
    assert result.detection is not None and (result.detection.k, result.detection.n) == (4, 4)
    for item in probe.items.all():
        i, j = item.perturbation["swapped_steps"]
        assert item.perturbed_steps[i - 1] == L1[j - 1] and item.perturbed_steps[j - 1] == L1[i - 1]


def verbose_world(body: dict[str, Any]) -> str:
    """The rewriter adds words to each step; the judge fails an L2 whose steps average under 30 characters."""
    prompt = prompt_of(body)
    if prompt.startswith("You are rewriting"):
        steps = prompt.split("steps):\n", 1)[1].split("\n\n", 1)[0].splitlines()
        return "\n".join(f"{line}, doing it slowly and with care as the step says" for line in steps)
    steps = l2_of(prompt)
    short = sum(len(step) for step in steps) / len(steps) < 30
    return judge_json([failure("Too terse to follow.")] if short else [])


def test_a_length_biased_judge_gains_from_the_verbose_rewrite(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = verbose_world
    judge = loopback_judge(llm_server)
    generator, _ = generations(8)
    probe = judge_probe_create(
        judge=judge,
        generator=generator,
        kind="verbose",
        n=8,
        seed=1,
        rewriter_config=rewriter_file(llm_server, tmp_path),
    )
    assert probe.job is not None and probe.job.total == 16  # per item a rewrite and a judging
    job = judge_probe_job_run(job_id=probe.job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 16, 0)
    result = probe_results(probe)
    change = result.change
    assert change is not None and (change.gained, change.lost, change.n) == (8, 0, 8)
    assert (change.original_score, change.perturbed_score, change.delta) == (0.0, 1.0, 1.0)
    assert change.p_value == pytest.approx(2 * 0.5**8)
    assert change.interval is not None and change.interval[0] > 0.5
    assert result.length_ratio.mean is not None and result.length_ratio.mean > 2
    item = probe.items.first()
    assert item is not None and item.perturbed_steps[0].startswith("Fill the kettle, doing it slowly")
    assert "same content" not in item.rewrite_output  # the rewriter's answer, not the prompt
    rewrite = next(r for r in llm_server.completion_requests if prompt_of(r.body).startswith("You are"))
    assert "Keep exactly 5 steps" in prompt_of(rewrite.body) and "1. Fill the kettle" in prompt_of(
        rewrite.body
    )


def test_a_rewrite_with_another_step_count_is_the_items_error(
    llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    def drops_a_step(body: dict[str, Any]) -> str:
        if prompt_of(body).startswith("You are rewriting"):
            return "1. Fill the kettle with fresh water\n2. Boil it"
        return judge_json()

    llm_server.responder = drops_a_step
    judge = loopback_judge(llm_server)
    generator, _ = generations(2)
    probe = judge_probe_create(
        judge=judge,
        generator=generator,
        kind="verbose",
        n=2,
        seed=0,
        rewriter_config=rewriter_file(llm_server, tmp_path),
    )
    job = judge_probe_job_run(job_id=probe.job_id)
    assert job is not None and job.status == JobStatus.FAILED and job.failed == 4
    assert all("the rewrite has 2 step(s), the original 5" in item.error for item in probe.items.all())
    assert probe_results(probe).n_failed == 2


def test_the_same_seed_draws_the_same_sample(llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    generator, _ = generations(10)
    first = judge_probe_create(
        judge=judge, generator=generator, kind="delete_step", n=4, seed=5, enqueue=False
    )
    again = judge_probe_create(
        judge=judge, generator=generator, kind="delete_step", n=4, seed=5, enqueue=False
    )
    other = judge_probe_create(
        judge=judge, generator=generator, kind="delete_step", n=4, seed=6, enqueue=False
    )

    def drawn(probe: JudgeProbe) -> list[tuple[int, Any]]:
        return [(item.generation_id, item.perturbation) for item in probe.items.all()]

    assert drawn(first) == drawn(again) != drawn(other)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "shuffle"}, "kind"),
        ({"n": 0}, "n"),
        ({"n": 7}, "n"),  # more than the 6 L2 there are
        ({"seed": -1}, "seed"),
        ({"kind": "verbose"}, "rewriter_config"),
        ({"rewriter_config": "configs/generators/smollm2-local.yaml"}, "rewriter_config"),
    ],
)
def test_it_refuses_what_cannot_run_naming_the_field(
    llm_server: LoopbackLLM, kwargs: dict[str, Any], field: str
) -> None:
    judge = loopback_judge(llm_server)
    generator, _ = generations(6)
    arguments: dict[str, Any] = {
        "judge": judge,
        "generator": generator,
        "kind": "delete_step",
        "n": 3,
        "seed": 0,
    }
    with pytest.raises(BadInput) as refused:
        judge_probe_create(**{**arguments, **kwargs})
    assert refused.value.field == field
    assert not JudgeProbe.objects.exists()


# --- the pages ----------------------------------------------------------------------------------------------


def probe_done(server: LoopbackLLM) -> JudgeProbe:
    server.responder = misses_a_step
    judge = loopback_judge(server)
    generator, _ = generations(3)
    probe = judge_probe_create(judge=judge, generator=generator, kind="delete_step", n=3, seed=0)
    judge_probe_job_run(job_id=probe.job_id)
    return probe


def test_the_probe_page_shows_its_job_and_figures(staff: Client, llm_server: LoopbackLLM) -> None:
    probe = probe_done(llm_server)
    page = staff.get(reverse("judging:probe_detail", args=[probe.pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert f'id="job-{probe.job_id}"' in text and "3 of 3 detected" in text and "100 %" in text
    assert text.count('data-item="') == 3
    fragment = staff.get(reverse("judging:probe_detail", args=[probe.pk]), HTTP_HX_REQUEST="true")
    assert fragment.content.decode().lstrip().startswith('<div id="probe-body"')


def test_the_report_card_lists_the_judges_probes(staff: Client, llm_server: LoopbackLLM) -> None:
    probe = probe_done(llm_server)
    page = staff.get(reverse("judges:report_card", args=[probe.judge.judge_id]))
    text = page.content.decode()
    assert page.status_code == 200 and "Judge probes" in text
    assert f'data-probe="{probe.pk}"' in text and "3 of 3 detected" in text
    card = staff.get(reverse("judge-report-card-api", args=[probe.judge.judge_id])).json()
    assert card["probes"][0]["detection_rate"] == 1.0 and card["probes"][0]["kind"] == "delete_step"


def test_the_pages_are_staff_only(client: Client, user_client: Client, llm_server: LoopbackLLM) -> None:
    probe = probe_done(llm_server)
    for url in (reverse("judging:probes"), reverse("judging:probe_detail", args=[probe.pk])):
        assert client.get(url).status_code == 302  # to the login page
        assert user_client.get(url).status_code == 403
    assert user_client.post(reverse("judging:probe_start"), {}).status_code == 403


def test_starting_needs_the_run_permission(staff: Client) -> None:
    assert staff.post(reverse("judging:probe_start"), {}).status_code == 403
    assert staff.get(reverse("judging:probe_start")).status_code == 405


def form_data(judge: Judge, generator: Generator, /, **fields: Any) -> dict[str, Any]:
    return {
        "judge": f"judge:{judge.pk}",
        "generator": generator.pk,
        "kind": "delete_step",
        "n": 3,
        "seed": 0,
        **fields,
    }


def test_the_form_starts_a_probe(runner: Client, llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    generator, _ = generations(4)
    response = runner.post(reverse("judging:probe_start"), form_data(judge, generator))
    probe = JudgeProbe.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "judging:probe_detail", args=[probe.pk]
    )
    assert (probe.kind, probe.n, probe.judge_id, probe.generator_id) == (
        "delete_step",
        3,
        judge.pk,
        generator.pk,
    )
    assert probe.job is not None and probe.job.created_by is not None


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"n": "0"}, "n", "greater than or equal to 1"),
        ({"n": "ten"}, "n", "whole number"),
        ({"n": "9"}, "n", "at most 4"),
        ({"seed": "-3"}, "seed", "greater than or equal to 0"),
        ({"kind": "shuffle"}, "kind", "not one of the available choices"),
        ({"kind": "verbose"}, "rewriter_config", "needs a rewriter"),
        ({"rewriter_config": "configs/generators/smollm2-local.yaml"}, "rewriter_config", "Only the verbose"),
        ({"rewriter_config": "../secrets.yaml", "kind": "verbose"}, "rewriter_config", "not one of"),
        ({"judge": "judge:999999"}, "judge", "not one of"),
        ({"generator": "999999"}, "generator", "not one of"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    runner: Client, llm_server: LoopbackLLM, fields: dict[str, Any], field: str, says: str
) -> None:
    judge = loopback_judge(llm_server)
    generator, _ = generations(4)
    response = runner.post(reverse("judging:probe_start"), form_data(judge, generator, **fields))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and says in " ".join(errors[field])
    assert not JudgeProbe.objects.exists()


# --- the command -----------------------------------------------------------------------------------------


def test_the_command_runs_a_probe_inline_and_prints_its_figures(llm_server: LoopbackLLM) -> None:
    llm_server.responder = misses_a_step
    judge = loopback_judge(llm_server)
    generations(3)
    out = io.StringIO()
    call_command(
        "probe_judge",
        "--judge", judge.judge_id, "--generator", "probed", "--kind", "delete_step", "--n", "3", "--inline",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    text = out.getvalue()
    assert "succeeded: 3 done, 0 failed of 3" in text and "detection rate 1.000" in text
    with pytest.raises(CommandError, match="n: '9' is not at most 3"):
        call_command(
            "probe_judge",
            "--judge",
            judge.judge_id,
            "--generator",
            "probed",
            "--kind",
            "swap_steps",
            "--n",
            "9",
        )
    with pytest.raises(CommandError, match="no generator"):
        call_command(
            "probe_judge", "--judge", judge.judge_id, "--generator", "nobody", "--kind", "swap_steps"
        )
