"""A second run of the same config over the same documents reuses every stored answer (the reference resumes
from its per-stage files): no request is sent, its funnel and its export equal the first run's. Answers are
matched by request identity, so a changed prompt sends only its stage; an unparsable answer is reused
(retrying errors asks again), an API error is sent again; a final
pass whose id is stored with other content is never overwritten and is counted apart, with the reason."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from mining.config import run_config_from_mapping
from mining.models import MiningRun, Procedure, Split, StageOutcome
from mining.runs import (
    EMPTY_GOAL,
    mine_job_run,
    mining_run_create,
    mining_run_rerun_stage,
    mining_run_retry_errors,
)
from mining.selectors import run_funnel, run_unstored
from tests.llm_server import Fail, LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db

MARKERS = {"r-good": "", "r-noproc": "NOPROC", "r-few": "FEWSTEPS", "r-brand": "BRAND", "r-no": "FINALNO"}
MARKERS |= {"r-nogoal": "NOGOAL", "r-garble": "GARBLE", "r-health": "HEALTH"}


@pytest.fixture
def documents(db: None) -> None:
    for doc_id, marker in MARKERS.items():
        make_document(doc_id, marker, topic="Health" if marker == "HEALTH" else "Food & Dining")


def mine(server: LoopbackLLM, tmp_path: Path, **top: Any) -> tuple[MiningRun, str]:
    """`manage.py mine CONFIG --inline`: the run it made and what it printed."""
    server.responder = canned_responder
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(loopback_config(server.base_url, **top)))
    out = StringIO()
    call_command("mine", str(path), "--inline", stdout=out)
    return MiningRun.objects.order_by("-pk").first(), out.getvalue()  # type: ignore[return-value]


def funnel_of(run: MiningRun) -> dict[str, Any]:
    funnel = run_funnel(run).as_json()
    funnel.pop("run")
    for row in [*funnel["topics"], funnel["total"]]:
        for cell in row["stages"]:
            cell.pop("reused")
    return funnel


def exported(run: MiningRun, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"run-{run.pk}.jsonl"
    call_command("export_procedures", str(out), "--run", str(run.pk), "--form", "how2mine", stdout=StringIO())
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_it_sends_nothing_the_second_time_and_keeps_funnel_and_export(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    first, _ = mine(llm_server, tmp_path)
    sent = len(llm_server.completion_requests)
    assert sent == StageOutcome.objects.filter(run=first).exclude(stage="prefilter").count() - 1  # no-goal

    second, printed = mine(llm_server, tmp_path)
    assert second.pk != first.pk
    assert len(llm_server.completion_requests) == sent  # not one request more
    assert funnel_of(second) == funnel_of(first)
    assert run_funnel(second).total.stored == run_funnel(first).total.stored == 2  # r-good, r-health
    assert exported(second, tmp_path) == exported(first, tmp_path) != []
    reused = StageOutcome.objects.filter(run=second, reused=True).count()
    assert reused == sent and f"{reused} answer(s) reused" in printed
    assert "procedures 2" in printed.splitlines()[-2]
    assert Procedure.objects.count() == 2  # stored once, kept by both runs
    assert set(Procedure.objects.get(source_example_id="r-good").mining_runs.all()) == {first, second}


def test_it_drops_an_empty_goal_at_the_filter_without_a_request(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    run, _ = mine(llm_server, tmp_path)
    stages = dict(
        StageOutcome.objects.filter(run=run, document__doc_id="r-nogoal").values_list("stage", "passed")
    )
    assert stages == {"extraction": True, "prefilter": True, "filter": False}
    rejection = StageOutcome.objects.get(run=run, document__doc_id="r-nogoal", stage="filter")
    assert (rejection.reason, rejection.raw_output, rejection.request_sha256) == (EMPTY_GOAL, "", "")
    assert not any(
        "NOGOAL" in str(r.body) and "## Possible" in str(r.body) for r in llm_server.completion_requests
    )


def test_it_counts_an_empty_goal_where_the_reference_counts_it(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    """The reference's filter counts as processed only what it sent: the empty goal is processed and passed
    by extraction and the heuristics, then "not sent" at the filter (dropped there, with its reason)."""
    run, _ = mine(llm_server, tmp_path)
    cells = {cell.stage: cell for cell in run_funnel(run).total.cells}
    sent = sum("## Possible" in str(r.body) for r in llm_server.completion_requests)
    assert (cells["filter"].processed, cells["filter"].not_sent) == (sent, 1)
    assert cells["filter"].processed == cells["prefilter"].passed - 1
    assert (cells["filter"].entered, cells["filter"].dropped) == (
        cells["prefilter"].passed,
        cells["prefilter"].passed - cells["filter"].passed,
    )
    assert [cell.not_sent for stage, cell in cells.items() if stage != "filter"] == [0] * 5


def test_it_sends_only_the_stage_whose_prompt_changed(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    mine(llm_server, tmp_path)
    sent = len(llm_server.completion_requests)
    prompt = tmp_path / "final.txt"
    prompt.write_text(
        Path("prompts/mine_final_filter.txt").read_text(encoding="utf-8") + " ", encoding="utf-8"
    )
    stages = loopback_config(llm_server.base_url)["stages"] | {"final_filter": {"prompt_path": str(prompt)}}
    second, _ = mine(llm_server, tmp_path, stages=stages)
    finals = StageOutcome.objects.filter(run=second, stage="final_filter")
    assert len(llm_server.completion_requests) - sent == finals.count() == 3  # r-good, r-health, r-no
    assert not finals.filter(reused=True).exists()
    assert StageOutcome.objects.filter(run=second, reused=True).count() == sent - 3
    assert run_funnel(second).total.stored == 2


def test_it_sends_api_errors_again(llm_server: LoopbackLLM, documents: None, tmp_path: Path) -> None:
    llm_server.script(Fail(400), Fail(400))  # two extraction requests fail for good (400: not retried)
    first, _ = mine(llm_server, tmp_path)
    failed = StageOutcome.objects.filter(run=first).exclude(error="").exclude(error__startswith="unparsable")
    documents_failed = set(failed.values_list("document_id", flat=True))
    assert len(documents_failed) == 2
    sent = len(llm_server.completion_requests)
    second, _ = mine(llm_server, tmp_path)
    assert len(llm_server.completion_requests) > sent
    again = StageOutcome.objects.filter(run=second, document__in=documents_failed, stage="extraction")
    assert again.count() == 2 and not again.filter(reused=True).exists()
    assert set(again.values_list("error", flat=True)) == {""}


def test_it_reuses_an_unparsable_answer_but_asks_again_when_errors_are_retried(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    mine(llm_server, tmp_path)
    second, _ = mine(llm_server, tmp_path)
    garbled = StageOutcome.objects.get(run=second, document__doc_id="r-garble", stage="extraction")
    assert garbled.reused and garbled.error == "unparsable output: no JSON object in the answer"
    sent = len(llm_server.completion_requests)
    mine_job_run(job_id=mining_run_retry_errors(run=second, enqueue=False).pk)
    assert len(llm_server.completion_requests) == sent + 1  # only the unparsable extraction
    again = StageOutcome.objects.get(run=second, document__doc_id="r-garble", stage="extraction")
    assert not again.reused and again.error.startswith("unparsable output")
    StageOutcome.objects.filter(pk=again.pk).update(  # as if the retry had got an answer that parses
        raw_output=json.dumps({"has_valid_process": False, "goal": "", "steps": []}), error=""
    )
    third, _ = mine(llm_server, tmp_path)
    assert len(llm_server.completion_requests) == sent + 1
    answer = StageOutcome.objects.get(run=third, document__doc_id="r-garble", stage="extraction")
    assert answer.reused and answer.error == "" and answer.reason == "no valid process in the document"


def test_it_counts_a_final_pass_stored_with_other_content_apart(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    Procedure.objects.create(
        source_example_id="r-good", goal="Imported goal", steps=["a", "b"], split=Split.BENCH
    )
    run, printed = mine(llm_server, tmp_path)
    assert StageOutcome.objects.get(run=run, document__doc_id="r-good", stage="final_filter").passed
    funnel = run_funnel(run)
    assert (funnel.total.cells[-1].passed, funnel.total.stored) == (2, 1)
    [unstored] = run_unstored(run)
    assert unstored.source_example_id == "r-good"
    assert "already stored with other content (split bench, from an import)" in unstored.reason
    assert f"not stored: r-good: {unstored.reason}" in printed
    assert Procedure.objects.get(source_example_id="r-good").goal == "Imported goal"  # not overwritten
    assert [r["source_example_id"] for r in exported(run, tmp_path)] == ["r-health"]


def test_it_keeps_a_procedure_another_run_keeps_when_a_stage_is_run_again(
    llm_server: LoopbackLLM, documents: None, tmp_path: Path
) -> None:
    first, _ = mine(llm_server, tmp_path)
    second, _ = mine(llm_server, tmp_path)
    job = mining_run_rerun_stage(run=second, stage="final_filter", enqueue=False)
    assert not second.kept_procedures.exists()
    assert Procedure.objects.count() == 2 and first.kept_procedures.count() == 2
    mine_job_run(job_id=job.pk)
    assert second.kept_procedures.count() == 2
    job = mining_run_rerun_stage(run=first, stage="final_filter", enqueue=False)
    mining_run_rerun_stage(run=second, stage="final_filter", enqueue=False)
    assert not Procedure.objects.exists()  # no run keeps them any more: pool procedures are deleted
    config = run_config_from_mapping(first.config)
    assert mining_run_create(config=config, enqueue=False).documents.count() == len(MARKERS)
