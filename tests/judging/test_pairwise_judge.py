"""Pairwise judge jobs (judging/pairwise_jobs.py): the verdict parser, the job end to end against the loopback
OpenAI-compatible server (real HTTP, scripted answers), resume and retry, the pairs refused, the verdicts read
back as pairwise_figures records, and one run with the embedded model (plumbing only)."""

from __future__ import annotations

import datetime
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from annotation.kinds.pairwise import comparisons as pairwise_figures
from annotation.kinds.pairwise.verdicts import pairwise_comparisons, pairwise_verdicts
from h2e_site.inputs import BadInput
from h2e_site.jobs.answering import NothingToAsk
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.registry import job_type_for
from h2e_site.jobs.services import job_retry_failed
from h2e_site.llm.config import config_from_mapping
from h2e_site.llm.prompts import PromptChanged
from judging.configs import judge_for_config
from judging.job_kinds import PAIRWISE_JUDGE
from judging.models import Generation, Judge, PairwiseJudgment
from judging.pairwise_jobs import pairwise_judge_job_create, pairwise_judge_job_run
from judging.pairwise_prompt import (
    VERDICT_GRAMMAR,
    pairwise_prompt,
    pairwise_template,
    pairwise_template_sha256,
    parse_pairwise_verdict,
)
from tests.factories import make_generation, make_generator, make_procedure
from tests.llm_server import Fail, LoopbackLLM

pytestmark = pytest.mark.django_db


# --- the parser ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("Procedure 1 skips a step.\nVerdict: 2", "second"),
        ("Both are fine.\n\nVerdict: both_none\n\n", "both_none"),
        ("Verdict: 1", "first"),
        ("Each misses the oven.\n   Verdict: both_fail  ", "both_fail"),
    ],
)
def test_it_reads_the_verdict_on_the_last_line(text: str, verdict: str) -> None:
    parsed = parse_pairwise_verdict(text)
    assert (parsed.verdict, parsed.problem, parsed.parse_failed) == (verdict, "", False)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "empty answer"),
        ("   \n", "empty answer"),
        ("Verdict: 1\nI changed my mind.", "the last line is not"),
        ("Verdict: 3", "the last line is not"),
        ("verdict: 1", "the last line is not"),
        ("Verdict: Procedure 1", "the last line is not"),
        ("**Verdict: 1**", "the last line is not"),
        ("Verdict: 1 or 2", "the last line is not"),
        ("Verdict: 2\nVerdict: 1", "more than one line"),
        ('{"verdict": "1"}', "the last line is not"),
    ],
)
def test_it_refuses_anything_but_one_verdict_line_at_the_end(text: str | None, problem: str) -> None:
    parsed = parse_pairwise_verdict(text)
    assert parsed.parse_failed and parsed.verdict == "" and problem in parsed.problem


@given(st.text())
def test_junk_is_a_parse_failure_never_an_exception(junk: str) -> None:
    parsed = parse_pairwise_verdict(junk)
    lines = [line.strip() for line in junk.splitlines() if line.strip()]
    readable = bool(lines) and lines[-1] in {f"Verdict: {v}" for v in ("1", "2", "both_none", "both_fail")}
    assert parsed.parse_failed == (not readable or any(x.startswith("Verdict:") for x in lines[:-1]))
    assert parsed.verdict in {"", "first", "second", "both_none", "both_fail"}


@given(st.text().filter(lambda text: "Verdict:" not in text), st.sampled_from(["1", "2", "both_fail"]))
def test_any_reasoning_followed_by_a_verdict_line_is_read(reasoning: str, answer: str) -> None:
    expected = {"1": "first", "2": "second", "both_fail": "both_fail"}[answer]
    assert parse_pairwise_verdict(f"{reasoning}\nVerdict: {answer}").verdict == expected


def test_the_prompt_shows_goal_l1_and_both_procedures_in_order() -> None:
    prompt = pairwise_prompt(
        pairwise_template(), goal=" Make tea ", reference_steps=["Boil"], first=["X1"], second=["Y1", "Y2"]
    )
    assert "Goal:\nMake tea\n\nL1:\n1. Boil\n\nProcedure 1:\n1. X1\n\nProcedure 2:\n1. Y1\n2. Y2\n" in prompt
    assert prompt.rstrip().endswith("and make it the last line.")
    assert 'root ::= "Reasoning: " reasoning "\\nVerdict: " verdict' in VERDICT_GRAMMAR


# --- the job against the loopback server --------------------------------------------------------------------


def loopback_judge(server: LoopbackLLM) -> Judge:
    config = {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": server.base_url,
        "max_concurrency": 4,
        "max_attempts": 2,
        "request_timeout_s": 10,
        "max_requests_per_minute": 100_000,
        "max_tokens_per_minute": 100_000_000,
    }
    return judge_for_config(config_from_mapping(config, role="judge"))


def pairs_of(n: int, *, generators: tuple[str, str] = ("gx", "gy")) -> list[tuple[int, int]]:
    """n goals, each with an L2 by each of two generators whose steps name it ("gx step 1", ...)."""
    makers = [make_generator(generator_id=g) for g in generators]
    pairs = []
    for i in range(n):
        procedure = make_procedure(goal=f"Goal {i}")
        a, b = (
            make_generation(generator=g, procedure=procedure, predicted_steps=[f"{g.generator_id} step 1"])
            for g in makers
        )
        pairs.append((a.pk, b.pk))
    return pairs


def shown(body: dict[str, Any]) -> tuple[str, str, str]:
    """(goal, generator shown first, generator shown second) of a pairwise request."""
    prompt = body["messages"][0]["content"]
    goal = prompt.split("\nGoal:\n", 1)[1].split("\n", 1)[0]
    first = prompt.split("Procedure 1:\n1. ", 1)[1].split(" ", 1)[0]
    second = prompt.split("Procedure 2:\n1. ", 1)[1].split(" ", 1)[0]
    return goal, first, second


def always_first(body: dict[str, Any]) -> str:
    return "Both look fine at first sight, but I prefer the first.\nVerdict: 1"


def test_it_asks_both_orders_and_records_a_flip(llm_server: LoopbackLLM) -> None:
    pairs = pairs_of(2)

    def judge_answers(body: dict[str, Any]) -> str:
        goal, first, _ = shown(body)
        if goal == "Goal 0":  # position-biased: always the first shown
            return always_first(body)
        return f"gx misses a step.\nVerdict: {1 if first == 'gy' else 2}"  # consistent: gy is better

    llm_server.responder = judge_answers
    judge = loopback_judge(llm_server)
    job = pairwise_judge_job_create(pairs, judge=judge)
    assert (job.kind, job.total, job.parameters["items"]) == (PAIRWISE_JUDGE, 4, [0, 1, 2, 3])
    assert job.parameters["pairs"] == [list(p) for p in pairs]
    assert job.parameters["prompt_sha256"] == pairwise_template_sha256()

    job = pairwise_judge_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 4, 0)
    assert job.parameters["usage"]["n"] == 4 and job.parameters["failed_items"] == []
    assert len(llm_server.completion_requests) == 4
    orders = {(shown(r.body)[0], shown(r.body)[1]) for r in llm_server.completion_requests}
    assert orders == {("Goal 0", "gx"), ("Goal 0", "gy"), ("Goal 1", "gx"), ("Goal 1", "gy")}
    rows = {(r.generation_a_id, r.order): r for r in PairwiseJudgment.objects.all()}
    assert len(rows) == 4
    first_pair = rows[pairs[0][0], "ab"]
    assert first_pair.verdict == "first" and first_pair.raw_output.endswith("Verdict: 1")
    assert first_pair.prompt_sha256 == job.parameters["prompt_sha256"] and first_pair.job_id == job.pk
    assert first_pair.attempts == 1 and first_pair.latency_s >= 0 and first_pair.completion_tokens
    flipped, steady = pairwise_verdicts(judge)
    assert (flipped.ab, flipped.ba, flipped.flipped) == ("first", "first", True)
    assert (flipped.canonical_ab, flipped.canonical_ba) == ("a_better", "b_better")
    assert (steady.ab, steady.ba, steady.flipped) == ("second", "first", False)
    assert (steady.generator_a, steady.generator_b) == ("gx", "gy")


def test_its_verdicts_feed_the_pairwise_figures(llm_server: LoopbackLLM) -> None:
    pairs = pairs_of(3)
    llm_server.responder = lambda body: (
        always_first(body) if shown(body)[0] != "Goal 2" else "Both fail.\nVerdict: both_fail"
    )
    judge = loopback_judge(llm_server)
    pairwise_judge_job_run(job_id=pairwise_judge_job_create(pairs, judge=judge).pk)

    records = pairwise_comparisons(judge)
    assert len(records) == 6 and {r.coder for r in records} == {judge.judge_id}
    assert {r.item for r in records} == set(pairs)
    flips = pairwise_figures.flip_rate(records)
    assert (flips.flips.k, flips.flips.n) == (2, 3)  # goals 0 and 1 flip, goal 2 ties both ways
    assert flips.consistent == {pairs[2]: pairwise_figures.TIE_FAIL}
    bias = pairwise_figures.position_bias(records)
    assert (bias.left.k, bias.left.n, bias.ties) == (4, 4, 2)  # every decisive answer chose the left

    keyed = pairwise_comparisons(judge, {(b, a): f"item-{i}" for i, (a, b) in enumerate(pairs[:2])})
    assert sorted({r.item for r in keyed}) == ["item-0", "item-1"] and len(keyed) == 4
    human = [
        pairwise_figures.Comparison("item-0", "h1", "gx", "gy", "gx", "right"),
        pairwise_figures.Comparison("item-1", "h1", "gx", "gy", "gy", "left"),
    ]
    agreement = pairwise_figures.judge_human_agreement(human, keyed)
    assert (agreement.answers.k, agreement.answers.n) == (2, 4)  # the "gy first" answers agree


def test_a_parse_failure_is_a_failed_item_kept_and_retried(llm_server: LoopbackLLM) -> None:
    [pair] = pairs_of(1)
    llm_server.responder = lambda body: (
        "I cannot decide." if shown(body)[1] == "gy" else "gy is better.\nVerdict: 2"
    )
    judge = loopback_judge(llm_server)
    job = pairwise_judge_job_run(job_id=pairwise_judge_job_create([pair], judge=judge).pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 1, 1)
    assert job.parameters["failed_items"] == [1] and job.parameters["usage"]["n"] == 2
    assert "item 1 (pair" in job.error and "the last line is not" in job.error
    unread = PairwiseJudgment.objects.get(order="ba")
    assert (unread.verdict, unread.raw_output) == ("", "I cannot decide.")
    assert "the last line is not" in unread.parse_problem
    assert pairwise_verdicts(judge)[0].flipped is None
    assert len(pairwise_comparisons(judge)) == 1  # a parse failure is no record

    llm_server.responder = lambda body: "gy is better.\nVerdict: 1"
    retry = job_retry_failed(job=job)
    assert retry.parameters["items"] == [1] and retry.parameters["retry_of"] == job.pk
    retry = pairwise_judge_job_run(job_id=retry.pk)
    assert retry is not None and (retry.status, retry.done, retry.failed) == (JobStatus.SUCCEEDED, 1, 0)
    unread.refresh_from_db()
    assert (unread.verdict, unread.parse_problem, unread.job_id) == ("first", "", retry.pk)
    assert pairwise_verdicts(judge)[0].flipped is False
    assert len(llm_server.completion_requests) == 3


def test_an_api_error_is_a_failed_item_without_a_row(llm_server: LoopbackLLM) -> None:
    [pair] = pairs_of(1)
    llm_server.responder = always_first
    llm_server.script(Fail(400, message="bad request"))
    judge = loopback_judge(llm_server)
    job = pairwise_judge_job_run(job_id=pairwise_judge_job_create([pair], judge=judge).pk)
    assert job is not None and (job.done, job.failed) == (1, 1)
    assert len(job.parameters["failed_items"]) == 1 and PairwiseJudgment.objects.count() == 1
    retry = pairwise_judge_job_run(job_id=job_retry_failed(job=job).pk)
    assert retry is not None and (retry.done, retry.failed) == (1, 0)
    assert PairwiseJudgment.objects.exclude(verdict="").count() == 2


def test_it_resumes_a_crashed_job_without_asking_anything_twice(llm_server: LoopbackLLM) -> None:
    pairs = pairs_of(3)
    llm_server.responder = always_first
    judge = loopback_judge(llm_server)
    job = pairwise_judge_job_create(pairs, judge=judge)
    # The crashed run: it answered pair 0 in order ab, failed item 1 (pair 0, ba), then its worker died.
    started = timezone.now() - datetime.timedelta(seconds=5)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        started_at=started,
        done=1,
        failed=1,
        parameters={**job.parameters, "failed_items": [1]},
    )
    a, b = pairs[0]
    PairwiseJudgment.objects.create(
        judge=judge,
        generation_a_id=a,
        generation_b_id=b,
        order="ab",
        verdict="first",
        prompt_sha256=job.parameters["prompt_sha256"],
    )

    job = pairwise_judge_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, 6, 5, 1)
    assert job.started_at == started
    assert len(llm_server.completion_requests) == 4
    assert PairwiseJudgment.objects.count() == 5
    # a new job over the same pairs asks only what has no verdict: pair 0 in order ba
    again = pairwise_judge_job_create(pairs, judge=judge, enqueue=False)
    assert again.parameters["pairs"] == [list(pairs[0])] and again.parameters["items"] == [1]


def test_it_asks_nothing_twice_and_fails_a_job_whose_prompt_changed(llm_server: LoopbackLLM) -> None:
    pairs = pairs_of(1)
    llm_server.responder = always_first
    judge = loopback_judge(llm_server)
    pairwise_judge_job_run(job_id=pairwise_judge_job_create(pairs, judge=judge).pk)
    with pytest.raises(NothingToAsk, match="nothing to judge"):
        pairwise_judge_job_create(pairs, judge=judge)

    PairwiseJudgment.objects.all().delete()
    job = pairwise_judge_job_create(pairs, judge=judge)
    Job.objects.filter(pk=job.pk).update(parameters={**job.parameters, "prompt_sha256": "0" * 64})
    with pytest.raises(PromptChanged):
        pairwise_judge_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "PromptChanged" in job.error and "prompts/pairwise_judge.txt" in job.error
    assert len(llm_server.completion_requests) == 2 and not PairwiseJudgment.objects.exists()


# --- refusals -----------------------------------------------------------------------------------------------


def test_it_refuses_pairs_that_are_not_two_l2s_of_one_goal(llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    [(a, b)] = pairs_of(1)
    other = make_generation(generator=Generation.objects.get(pk=a).generator, procedure=make_procedure())
    failed = make_generation(procedure=Generation.objects.get(pk=a).procedure)
    Generation.objects.filter(pk=failed.pk).update(error="HTTP 500", predicted_steps=[])
    refusals = [
        ([(a, a)], f"pairs: '({a}, {a})' is not a pair of two different generations"),
        ([(a, other.pk)], f"generation {a} is of procedure"),
        ([(b, 999_999)], "no generation 999999"),
        ([(a, failed.pk)], f"generation {failed.pk} failed"),
        ([(a, "x")], "a pair of two generation ids"),
        ([(a, b, a)], "a pair of two generation ids"),
        ([(a, -1)], "positive whole numbers"),
        ([str(a) + str(b)], "a pair of two generation ids"),
        ([(a, 1.5)], "a pair of two generation ids"),
        ([(a, True)], "a pair of two generation ids"),
        ([], "at least one pair"),
    ]
    for pairs, message in refusals:
        with pytest.raises(BadInput, match=r"^pairs: ") as refused:
            pairwise_judge_job_create(pairs, judge=judge)  # type: ignore[arg-type]
        assert message in str(refused.value)
    assert not Job.objects.exists()


def test_the_table_holds_a_pair_once_per_order_with_a_before_b(llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    [(a, b)] = pairs_of(1)
    fields = {"judge": judge, "verdict": "first", "prompt_sha256": "s"}
    PairwiseJudgment.objects.create(generation_a_id=a, generation_b_id=b, order="ab", **fields)
    for wrong in [
        {"generation_a_id": a, "generation_b_id": b, "order": "ab"},
        {"generation_a_id": b, "generation_b_id": a, "order": "ba"},
        {"generation_a_id": a, "generation_b_id": b, "order": "xy"},
    ]:
        with pytest.raises(IntegrityError), transaction.atomic():
            PairwiseJudgment.objects.create(**wrong, **fields)


def test_the_command_starts_a_job_over_the_pairs_of_a_file(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    pairs = pairs_of(2)
    config = tmp_path / "judge.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": "loopback-model",
                "backend": "openai",
                "provider": "openai",
                "base_url": llm_server.base_url,
            }
        )
    )
    listed = tmp_path / "pairs.txt"
    listed.write_text(f"# two goals\n{pairs[0][1]} {pairs[0][0]}\n\n{pairs[1][0]},{pairs[1][1]}\n")
    out = io.StringIO()
    call_command("pairwise_judge", "--judge-config", str(config), "--pairs-file", str(listed), stdout=out)
    job = Job.objects.get(kind=PAIRWISE_JUDGE)
    assert f"job {job.pk}: pairwise judge with loopback-model" in out.getvalue()
    assert "2 pair(s), 4 question(s)" in out.getvalue()
    assert job.parameters["pairs"] == [list(p) for p in pairs]
    listed.write_text(f"{pairs[0][0]} {pairs[0][0]}\n")
    with pytest.raises(CommandError, match="is not a pair of two different generations"):
        call_command("pairwise_judge", "--judge-config", str(config), "--pairs-file", str(listed))
    with pytest.raises(CommandError, match="--pairs-file"):
        call_command("pairwise_judge", "--judge-config", str(config), "--pairs-file", str(tmp_path / "none"))


# --- the Jobs pages -----------------------------------------------------------------------------------------


def test_the_jobs_page_shows_a_pairwise_job_with_its_judge(staff: Any, llm_server: LoopbackLLM) -> None:
    judge = loopback_judge(llm_server)
    job = pairwise_judge_job_create(pairs_of(2), judge=judge, enqueue=False)
    assert job_type_for(PAIRWISE_JUDGE).label == "Pairwise judge (L2 vs L2)"
    html = staff.get(reverse("jobs:job_list")).content.decode()
    assert "Pairwise judge (L2 vs L2)" in html and "2 pairs, both orders" in html
    page = staff.get(reverse("jobs:job_detail", args=[job.pk])).content.decode()
    assert judge.judge_id in page


# --- the embedded model -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_it_runs_with_the_embedded_model(local_llm_url: str) -> None:
    config = {
        "model": "SmolLM2-135M-Instruct",
        "backend": "local",
        "base_url": local_llm_url,
        "max_new_tokens": 200,
        "max_concurrency": 1,
        "request_timeout_s": 600,
        "max_attempts": 2,
        "max_tokens_per_minute": 10_000_000,
        "is_demo_model": True,
    }
    judge = judge_for_config(config_from_mapping(config, role="judge"))
    [pair] = pairs_of(1)
    job = pairwise_judge_job_run(job_id=pairwise_judge_job_create([pair], judge=judge).pk)

    assert job is not None and job.status in (JobStatus.SUCCEEDED, JobStatus.FAILED), job and job.error
    assert job.done + job.failed == 2 and job.parameters["usage"]["n"] == 2
    rows = {row.order: row for row in PairwiseJudgment.objects.filter(judge=judge)}
    failed = set(job.parameters["failed_items"])
    for item, order in enumerate(("ab", "ba")):
        assert order in rows and rows[order].raw_output and rows[order].prompt_tokens
        assert rows[order].verdict or item in failed
    # the grammar holds the model to one line of reasoning and a verdict line, so each answer reads
    assert all(row.verdict for row in rows.values()), [row.raw_output for row in rows.values()]
