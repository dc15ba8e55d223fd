"""A mining run through the loopback OpenAI-compatible server with canned stage answers: every stage's pass
and fail paths, the outcomes stored per document, procedures in the pool, resume, re-running a stage."""

from __future__ import annotations

import pytest

from h2e_site.jobs.models import JobStatus
from mining.config import run_config_from_mapping
from mining.models import MiningRun, Procedure, RunStatus, Split, StageOutcome
from mining.runs import mine_job_run, mining_run_create, mining_run_rerun_stage, mining_run_retry_errors
from tests.llm_server import Fail, LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db

CASES = {  # doc id -> (marker, the stage that stops it or "" when it passes them all)
    "d-good": ("", ""),
    "d-noproc": ("NOPROC", "extraction"),
    "d-garble": ("GARBLE", "extraction"),
    "d-few": ("FEWSTEPS", "prefilter"),
    "d-repeat": ("REPEAT", "prefilter"),
    "d-brand": ("BRAND", "filter"),
    "d-finalno": ("FINALNO", "final_filter"),
}


@pytest.fixture
def documents(db: None) -> None:
    for doc_id, (marker, _) in CASES.items():
        make_document(doc_id, marker)


def start_run(server: LoopbackLLM, **top: object) -> MiningRun:
    server.responder = canned_responder
    config = run_config_from_mapping(loopback_config(server.base_url, **top))
    return mining_run_create(config=config, enqueue=False)


def outcomes_by_document(run: MiningRun) -> dict[str, dict[str, bool]]:
    table: dict[str, dict[str, bool]] = {}
    for doc_id, stage, passed in StageOutcome.objects.filter(run=run).values_list(
        "document__doc_id", "stage", "passed"
    ):
        table.setdefault(doc_id, {})[stage] = passed
    return table


def last_stage(stages: dict[str, bool]) -> tuple[str, bool]:
    order = ["extraction", "prefilter", "filter", "postprocess", "resources", "final_filter"]
    stage = max(stages, key=order.index)
    return stage, stages[stage]


def test_it_runs_every_stage_and_stops_each_document_where_it_fails(
    llm_server: LoopbackLLM, documents: None
) -> None:
    run = start_run(llm_server)
    assert run.job is not None
    job = mine_job_run(job_id=run.job.pk)
    assert job is not None
    assert (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, 7, 6, 1)
    table = outcomes_by_document(run)
    for doc_id, (_, stops_at) in CASES.items():
        stage, passed = last_stage(table[doc_id])
        assert (stage, passed) == (stops_at or "final_filter", not stops_at), doc_id
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    # 7 extractions, 3 filters, 2 x 3 postprocess/resources/final = 7 + 2 + 2*3 ... counted from the outcomes
    assert (
        len(llm_server.completion_requests)
        == StageOutcome.objects.filter(run=run).exclude(stage="prefilter").count()
    )


def test_it_stores_the_reason_payload_tokens_and_cost(llm_server: LoopbackLLM, documents: None) -> None:
    run = start_run(llm_server)
    mine_job_run(job_id=run.job_id or 0)
    garbled = StageOutcome.objects.get(run=run, document__doc_id="d-garble", stage="extraction")
    assert garbled.error.startswith("unparsable output") and garbled.reason == garbled.error
    assert "not json" in garbled.raw_output
    brand = StageOutcome.objects.get(run=run, document__doc_id="d-brand", stage="filter")
    assert brand.reason == "Named-entity focused: a branded product."
    assert brand.payload == {"judgment": True, "reason": "Named-entity focused: a branded product."}
    repeat = StageOutcome.objects.get(run=run, document__doc_id="d-repeat", stage="prefilter")
    assert repeat.reason == "2-gram repetition 0.833 >= 0.40"
    extraction = StageOutcome.objects.get(run=run, document__doc_id="d-good", stage="extraction")
    assert extraction.prompt_tokens and extraction.completion_tokens
    expected = (extraction.prompt_tokens * 2.0 + extraction.completion_tokens * 8.0) / 1e6
    assert extraction.cost == pytest.approx(expected)


def test_it_makes_a_pool_procedure_of_each_final_pass(llm_server: LoopbackLLM, documents: None) -> None:
    run = start_run(llm_server)
    mine_job_run(job_id=run.job_id or 0)
    procedure = Procedure.objects.get()
    assert procedure.source_example_id == "d-good"
    assert (procedure.split, procedure.mining_run, procedure.source_document.doc_id) == (
        Split.POOL,
        run,
        "d-good",
    )
    assert procedure.goal == "Bake a loaf of bread with a crisp crust"
    assert procedure.resources == [
        "oven",
        "bowl",
        "flour",
        "oven",
    ]  # as answered, as the reference keeps them
    assert list(procedure.mining_runs.all()) == [run]
    assert procedure.steps == [
        "Mix flour, water, salt and yeast in a bowl.",
        "Knead the dough for ten minutes.",
        "Let the dough rise for one hour.",
        "Shape the dough into a round loaf.",
        "Bake the loaf for thirty minutes.",
    ]
    assert procedure.topic is not None and procedure.topic.name == "Food & Dining"
    assert procedure.url == "https://example.com/d-good"


def test_it_stores_api_errors_as_failed_outcomes_and_retries_them(
    llm_server: LoopbackLLM, documents: None
) -> None:
    llm_server.script(Fail(400), Fail(400))  # the first extraction request fails for good (400: not retried)
    run = start_run(llm_server, candidates_per_topic=None)
    mine_job_run(job_id=run.job_id or 0)
    failed = StageOutcome.objects.filter(run=run).exclude(error="").exclude(error__startswith="unparsable")
    assert failed.count() >= 1
    assert all(o.reason.startswith("API error") and not o.passed for o in failed)
    job = mining_run_retry_errors(run=run, enqueue=False)
    mine_job_run(job_id=job.pk)
    assert (
        not StageOutcome.objects.filter(run=run)
        .exclude(error="")
        .exclude(error__startswith="unparsable")
        .exists()
    )


def test_it_resumes_sending_only_what_has_no_outcome(llm_server: LoopbackLLM, documents: None) -> None:
    run = start_run(llm_server)
    mine_job_run(job_id=run.job_id or 0)
    first = len(llm_server.completion_requests)
    StageOutcome.objects.filter(run=run, document__doc_id="d-good", stage="final_filter").delete()
    Procedure.objects.all().delete()
    from mining.runs import mining_run_start

    job = mining_run_start(run=run, enqueue=False)
    mine_job_run(job_id=job.pk)
    assert len(llm_server.completion_requests) == first + 1
    assert Procedure.objects.filter(source_example_id="d-good").exists()


def test_it_reruns_a_stage_invalidating_the_stages_after_it(llm_server: LoopbackLLM, documents: None) -> None:
    run = start_run(llm_server)
    mine_job_run(job_id=run.job_id or 0)
    before = StageOutcome.objects.filter(run=run).count()
    llm_server.reset()
    config = dict(run.config)
    config["prefilter"] = {"min_steps": 3}
    job = mining_run_rerun_stage(run=run, stage="prefilter", config=config, enqueue=False)
    assert not StageOutcome.objects.filter(
        run=run, stage__in=["prefilter", "filter", "final_filter"]
    ).exists()
    assert not Procedure.objects.exists()
    mine_job_run(job_id=job.pk)
    # extraction was not sent again; d-few now passes the heuristics (3 steps >= 3)
    assert not any("<start of document>" in str(r.body) for r in llm_server.completion_requests)
    few = outcomes_by_document(run)["d-few"]
    assert few["prefilter"] and few["final_filter"]
    assert StageOutcome.objects.filter(run=run).count() > before
    assert set(Procedure.objects.values_list("source_example_id", flat=True)) == {"d-good", "d-few"}


def test_it_takes_the_first_candidates_per_topic_in_import_order(
    llm_server: LoopbackLLM, documents: None
) -> None:
    for i in (4, 0, 3, 1, 2):  # imported in this order: the doc ids do not sort as they were imported
        make_document(f"h-{i}", topic="Health")
    config = run_config_from_mapping(loopback_config(llm_server.base_url, candidates_per_topic=3))
    run = mining_run_create(config=config, enqueue=False)
    chosen = set(run.documents.values_list("doc_id", flat=True))
    assert {d for d in chosen if d.startswith("h-")} == {"h-4", "h-0", "h-3"}
    assert {d for d in chosen if d.startswith("d-")} == {"d-good", "d-noproc", "d-garble"}


def test_it_samples_candidates_per_topic_with_the_seed_when_asked(
    llm_server: LoopbackLLM, documents: None
) -> None:
    for i in range(5):
        make_document(f"h-{i}", topic="Health")
    config = run_config_from_mapping(
        loopback_config(llm_server.base_url, candidates_per_topic=3, sample_candidates=True, seed=7)
    )
    first = mining_run_create(config=config, enqueue=False)
    second = mining_run_create(config=config, enqueue=False)
    chosen = sorted(first.documents.values_list("doc_id", flat=True))
    assert chosen == sorted(second.documents.values_list("doc_id", flat=True))
    assert len(chosen) == 6
    assert sum(1 for d in chosen if d.startswith("h-")) == 3


def test_it_mines_from_a_config_file_with_the_command(
    llm_server: LoopbackLLM, documents: None, tmp_path
) -> None:
    from io import StringIO

    import yaml
    from django.core.management import call_command

    llm_server.responder = canned_responder
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(loopback_config(llm_server.base_url, candidates_per_topic=7)))
    out = StringIO()
    call_command("mine", str(path), "--inline", stdout=out)
    assert "over 7 document(s)" in out.getvalue()
    assert "All topics: 7 docs  extraction 5/7  prefilter 3/5" in out.getvalue()
