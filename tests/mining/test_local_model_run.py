"""A real mining run through the embedded model (SmolLM2-135M behind llama.cpp): every request constrained by
the stage's bounded JSON schema, so the answers parse. The model is weak and slow (~20 s a call on 2 cores):
one short document, small max_tokens, and the heuristics relaxed so the document can reach the later stages
(at most five calls). What is checked is the plumbing, not the quality of the procedures."""

from __future__ import annotations

import pytest

from h2e_site.jobs.models import JobStatus
from mining.config import run_config_from_mapping
from mining.models import STAGE_ORDER, SourceDocument, StageOutcome
from mining.runs import mine_job_run, mining_run_create
from mining.selectors import run_funnel
from tests.factories import make_topic

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

DOCUMENT = (
    "How to make a cup of tea. Boil water in a kettle. Put a tea bag in a mug. Pour the hot water over the "
    "tea bag. Wait three minutes. Remove the tea bag. Add milk and stir."
)


def test_it_mines_a_document_with_the_embedded_model(local_llm_url: str) -> None:
    SourceDocument.objects.create(doc_id="tea", text=DOCUMENT, topic=make_topic("Food & Dining"))
    config = {
        "name": "smollm2",
        "prefilter": {"min_steps": 1, "max_steps": 15},
        "stages": {
            "default": {
                "model": "SmolLM2-135M-Instruct",
                "backend": "local",
                "base_url": local_llm_url,
                "max_new_tokens": 200,
                "max_concurrency": 1,
                "request_timeout_s": 300,
                "max_attempts": 2,
                "max_tokens_per_minute": 10_000_000,
            }
        },
    }
    run = mining_run_create(config=run_config_from_mapping(config), enqueue=False)
    job = mine_job_run(job_id=run.job_id or 0)
    assert job is not None and job.status == JobStatus.SUCCEEDED, job and job.error
    outcomes = {o.stage: o for o in StageOutcome.objects.filter(run=run)}
    extraction = outcomes["extraction"]
    assert extraction.raw_output and extraction.prompt_tokens and extraction.completion_tokens
    # the bounded schema keeps the answer JSON: parsed, or (when max_tokens cut it) reported, never a crash
    assert extraction.payload or extraction.error.startswith("unparsable output")
    reached = [stage for stage in STAGE_ORDER if stage in outcomes]
    assert reached == list(STAGE_ORDER[: len(reached)])
    for stage in reached[:-1]:
        assert outcomes[stage].passed, stage
    funnel = run_funnel(run)
    assert [cell.processed for cell in funnel.total.cells] == [1 if s in outcomes else 0 for s in STAGE_ORDER]
