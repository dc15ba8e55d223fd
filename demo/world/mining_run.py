"""The synthetic demo world's How2Mine run: a finished run over the imported sample documents
(demo/mining/documents.jsonl), so the Mining page and a run's funnel have figures without the ~20 minutes
the embedded model would take. No model is asked: each LLM stage's answer is written here in the JSON the
stage's prompt asks for, from the document's text (its first line the goal, its numbered lines the steps)
and a few facts written for the sample (SAMPLE_RESOURCES, SAMPLE_FINAL_NO), and read by the stage's own
parser (mining/stages.py); the heuristics filter is the real one (prefilter_stage_run). A stage sees only
what passed the stage before (runs.pending_documents, runs.stage_inputs), as in a run.

What keeps it apart from real runs:
- No outcome has a request identity (request_sha256 is ""): a real run reuses only a stored answer whose
  request_sha256 equals its own request's SHA-256 (runs._stored_answers), so nothing written here is ever
  reused, and a real run over the same documents sends its requests.
- Every LLM outcome keeps its raw answer, so none reads as "dropped without a request" (models.NOT_SENT).
- Its kept procedures are named "synthetic-demo-mined-<doc id>" in the pool (split "pool": not in the bench,
  so no leaderboard changes), never the document's id, which a real run's procedure takes.
- The run is named "synthetic-…" (the badge on the mining pages), and mining_run_start refuses to start it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from h2e_site.synthetic import SYNTHETIC_ID_PREFIX, SYNTHETIC_MODEL_PREFIX
from judging.metrics import count_tokens
from mining.config import RunConfig, run_config_from_mapping
from mining.models import MiningRun, Procedure, RunStatus, SourceDocument, Split, Stage, StageOutcome
from mining.runs import outcomes_insert, pending_documents, prefilter_stage_run, stage_inputs
from mining.stages import FINAL_QUESTIONS, parse_stage_output, stage_prompt

RUN_NAME = "synthetic-demo-mining"
MINED_PREFIX = f"{SYNTHETIC_ID_PREFIX}mined-"
MAX_DOCUMENTS = 200  # the sample is 14; a database with more documents gets a run over the first 200
CONFIG: dict[str, Any] = {
    "name": RUN_NAME,
    "seed": 0,
    "max_document_chars": 2000,
    "stages": {"default": {"model": f"{SYNTHETIC_MODEL_PREFIX}how2mine", "backend": "local",
                           "max_new_tokens": 256}},
}  # fmt: skip
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+?)\s*$", re.MULTILINE)
_CLICKS = re.compile(r"\bclick\b", re.IGNORECASE)
UI_REASON = "UI interaction: the steps are clicks and fields of a device's web page, not a procedure."
# What the resource extraction lists for the sample's documents that reach it (others: none listed).
SAMPLE_RESOURCES: dict[str, list[str]] = {
    "demo-web-01": ["wholemeal flour", "lukewarm water", "a clean glass jar"],
    "demo-web-03": ["a radiator key", "an old cloth"],
    "demo-web-04": ["a new pot with drainage holes", "fresh potting mix", "water"],
    "demo-web-05": ["cool running water", "a clean cloth", "cling film or a sterile non-stick dressing"],
    "demo-web-07": ["a cabin bag", "a clear resealable bag", "a luggage scale"],
    "demo-web-09": ["running shoes"],
    "demo-web-10": ["a spoke key", "tape"],
    "demo-web-11": ["a soldering iron", "solder", "heat-shrink tubing", "a heat gun", "a wire stripper"],
    "demo-web-13": ["the job advert", "a highlighter"],
}
# The goal the rewrite gives a sample document whose title is not "How to …".
SAMPLE_GOALS = {"demo-web-04": "How to repot a houseplant"}
# The final validation's "no" for the sample's documents it drops: (question, reason).
SAMPLE_FINAL_NO: dict[str, tuple[str, str]] = {
    "demo-web-13": ("sequential", "the paragraphs can be written in any order"),
}


def mining_run_create(*, seed: int) -> MiningRun | None:
    """The finished synthetic run over the imported documents (the first MAX_DOCUMENTS), with its kept
    procedures in the pool; None when no document is imported."""
    documents = list(SourceDocument.objects.order_by("pk")[:MAX_DOCUMENTS])
    if not documents:
        return None
    config = run_config_from_mapping({**CONFIG, "seed": seed}, source="the synthetic demo run")
    run = MiningRun.objects.create(name=RUN_NAME, config=config.data, status=RunStatus.RUNNING)
    run.documents.set(documents)
    _answered(run, config, Stage.EXTRACTION, lambda pk, inputs: _extraction(inputs["document"]))
    prefilter_stage_run(run=run)
    doc_ids = {document.pk: document.doc_id for document in documents}
    _answered(run, config, Stage.FILTER, lambda pk, inputs: _filter(inputs["steps"]))
    _answered(run, config, Stage.POSTPROCESS, lambda pk, inputs: _postprocess(inputs, doc_ids[pk]))
    _answered(run, config, Stage.RESOURCES, lambda pk, inputs: _resources(doc_ids[pk]))
    _answered(run, config, Stage.FINAL_FILTER, lambda pk, inputs: _final(doc_ids[pk]))
    _procedures_keep(run)
    MiningRun.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    run.refresh_from_db()
    return run


Answer = Callable[[int, dict[str, Any]], str]


def _answered(run: MiningRun, config: RunConfig, stage: str, answer: Answer) -> None:
    """Every document waiting for `stage` answered by `answer` (the raw text a model would write), read by
    the stage's parser; the tokens counted are those of the prompt the stage would send and of the answer.
    No request identity: nothing here is reused by a real run."""
    pks = pending_documents(run, stage)
    template = config.stage_config(stage).prompt_text()
    if stage == Stage.EXTRACTION:
        texts = SourceDocument.objects.filter(pk__in=pks).values_list("pk", "text")
        limit = config.max_document_chars
        inputs = {pk: {"document": text[:limit] if limit else text} for pk, text in texts}
    else:
        inputs = stage_inputs(run, stage, pks)
    outcomes = []
    for pk in pks:
        raw = answer(pk, inputs[pk])
        verdict = parse_stage_output(stage, raw)
        outcomes.append(
            StageOutcome(run=run, document_id=pk, stage=stage, passed=verdict.passed, reason=verdict.reason,
                         payload=verdict.payload, raw_output=raw, error=verdict.error, request_sha256="",
                         prompt_tokens=count_tokens([stage_prompt(template, stage, inputs[pk])]),
                         completion_tokens=count_tokens([raw]), cost=0.0)
        )  # fmt: skip
    outcomes_insert(outcomes)


def _extraction(document: str) -> str:
    """The goal (the first line, as "How to …") and the numbered steps; no valid process without them."""
    steps = _NUMBERED.findall(document)
    if not steps:
        return json.dumps({"has_valid_process": False, "goal": "", "steps": []})
    title = document.strip().splitlines()[0].strip()
    return json.dumps({"has_valid_process": True, "goal": title, "steps": steps})


def _filter(steps: list[str]) -> str:
    """Excluded (judgment true) when the steps are clicks in an interface; otherwise kept."""
    if any(_CLICKS.search(step) for step in steps):
        return json.dumps({"judgment": True, "reason": UI_REASON})
    return json.dumps({"judgment": False, "reason": ""})


def _postprocess(inputs: dict[str, Any], doc_id: str) -> str:
    """The goal as "How to …" in lower case (SAMPLE_GOALS where the title is in another form), the steps
    as they are."""
    title = str(inputs["goal"]).removeprefix("How to ").removeprefix("how to ")
    goal = SAMPLE_GOALS.get(doc_id) or f"How to {title.lower()}"
    return json.dumps({"rewritten_goal": goal, "rewritten_steps": inputs["steps"]})


def _resources(doc_id: str) -> str:
    return json.dumps({"resources": SAMPLE_RESOURCES.get(doc_id, [])})


def _final(doc_id: str) -> str:
    no = SAMPLE_FINAL_NO.get(doc_id)
    answers = {question: {"answer": "yes", "reason": ""} for question in FINAL_QUESTIONS}
    if no is not None:
        answers[no[0]] = {"answer": "no", "reason": no[1]}
    return json.dumps(answers)


def _procedures_keep(run: MiningRun) -> None:
    """Each final pass as a pool procedure named after its document ("synthetic-demo-mined-<doc id>"),
    kept by the run (its export, the funnel's "stored")."""
    passed = list(
        StageOutcome.objects.filter(run=run, stage=Stage.FINAL_FILTER, passed=True).select_related("document")
    )
    pks = [outcome.document_id for outcome in passed]
    inputs = stage_inputs(run, Stage.FINAL_FILTER, pks)
    procedures = [
        Procedure(
            source_example_id=f"{MINED_PREFIX}{o.document.doc_id}",
            topic_id=o.document.topic_id,
            goal=inputs[o.document_id]["goal"],
            steps=inputs[o.document_id]["steps"],
            resources=inputs[o.document_id].get("resources", []),
            url=o.document.url,
            source_text=o.document.text,
            split=Split.POOL,
            ordered=True,  # every final answer "yes", "sequential" too
            n_tokens=count_tokens(inputs[o.document_id]["steps"]),
            mining_run=run,
            source_document=o.document,
        )
        for o in passed
    ]
    run.kept_procedures.add(*Procedure.objects.bulk_create(procedures))
