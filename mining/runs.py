"""Mining runs as jobs: the How2Mine stages over a run's documents, each stage's outcome per document stored.

How a run is executed (mine_job_run, called by the thin task in tasks.py, one MINE Job per execution):
- The stages run in order (models.STAGE_ORDER). A stage's work is the documents that passed the stage before
  (extraction: every document of the run) and have no outcome at this stage yet: so a run resumed after a
  crash, or started again, sends only what has no outcome.
- LLM stages stream their requests to the stage's backend (h2e_site.llm: OpenAI-compatible, vLLM, the embedded
  model) a chunk of documents at a time through the core run loop (h2e_site.jobs.loop): results are written
  as they arrive, in short transactions. A crash loses at most those and the requests in flight. An API error
  or an unparsable answer is a failed outcome (passed false, error and reason set).
- The heuristics filter runs in-process, PREFILTER_CHUNK documents per transaction.
- A final-validation pass makes the document's procedure a Procedure row in the pool (split "pool").
- One runner per job (the job's advisory lock); a starting worker resumes MINE jobs left RUNNING by a dead
  one, as it does every resumable kind of job (h2e_site.jobs.services.resume_orphaned_jobs).
- Answers are reused: before a stage sends its requests, each request's identity (stages.request_sha256:
  stage, model identity, filled prompt) is looked up among the stored outcomes of every run; an answer
  found is copied into this run (reused, its tokens and cost as they were) and not sent. So a second run of
  the same config over the same documents sends nothing, and a run that changes one stage's prompt or model
  sends only that stage and what follows from its new answers. An unparsable answer is reused too (it is
  the model's answer to that request; the reference keeps it as well) except by mining_run_retry_errors,
  which asks again; an API error is no answer and is always sent again. A document whose extraction has
  an empty goal is rejected by the LLM filter without a request (as the reference drops it there); the
  funnel counts it as the reference does, not sent rather than processed (models.NOT_SENT).
- Procedures are shared: a final pass whose source_example_id is already stored with the same content (topic,
  goal, steps, resources) is linked to this run too (MiningRun.kept_procedures: the run's export); one stored
  with different content (another run's rewrite, an imported bench record) is never overwritten, and the
  funnel shows the final pass as not stored, with the reason (selectors.run_unstored).
- Re-running a stage (mining_run_rerun_stage) deletes the outcomes of that stage and every later one (and
  unlinks the run's procedures, deleting those in the pool no other run keeps), then starts the run again.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import connection, reset_queries, transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from h2e_site.embeddings.jobs import embed_after
from h2e_site.jobs.loop import FETCH_CHUNK, JobWork, chunked_requests, job_run
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import job_create
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult
from h2e_site.synthetic import is_synthetic

from .config import LLM_STAGES, RunConfig, run_config_from_mapping
from .embedding import PROCEDURES
from .job_kinds import MINE
from .models import STAGE_ORDER, MiningRun, Procedure, RunStatus, SourceDocument, Split, Stage, StageOutcome
from .prefilter import prefilter_steps
from .stages import StageVerdict, parse_stage_output, request_sha256, stage_prompt, stage_request

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

PREFILTER_CHUNK = 5000
EMPTY_GOAL = "the extraction's goal is empty: not sent to the LLM filter (as the reference)"
INPUT_STAGES: dict[str, tuple[str, ...]] = {
    Stage.PREFILTER: (Stage.EXTRACTION,),
    Stage.FILTER: (Stage.EXTRACTION,),
    Stage.POSTPROCESS: (Stage.EXTRACTION,),
    Stage.RESOURCES: (Stage.POSTPROCESS,),
    Stage.FINAL_FILTER: (Stage.POSTPROCESS, Stage.RESOURCES),
}
_JOB_TO_RUN_STATUS: dict[str, str] = {
    JobStatus.SUCCEEDED: RunStatus.SUCCEEDED,
    JobStatus.FAILED: RunStatus.FAILED,
    JobStatus.CANCELLED: RunStatus.CANCELLED,
}


class RunRefused(ValueError):
    """The run cannot be started (or re-run) now; the message says why."""


class RunBusy(RunRefused):
    """The run has a job queued or running: cancel it first."""


class SyntheticRun(RunRefused):
    """The run is synthetic demo data (h2e_site.synthetic): its outcomes were written, not answered, and are
    never sent, re-run or mixed with a model's answers."""


# --- creating, starting, re-running ---------------------------------------------------------------------


def mining_run_create(
    *,
    config: RunConfig,
    documents: QuerySet[SourceDocument] | None = None,
    name: str = "",
    created_by: User | None = None,
    enqueue: bool = True,
) -> MiningRun:
    """A run over `config.candidates_per_topic` documents per topic (select_documents) of `documents`
    (default: all), started at once (enqueue=False: the job is created but not queued). Answers stored by
    earlier runs for the same requests are reused when it runs: the same config over the same documents
    sends no request again."""
    with transaction.atomic():
        run = MiningRun.objects.create(name=name or config.name, config=config.data)
        through = MiningRun.documents.through
        pks = select_documents(config, documents)
        for start in range(0, len(pks), 5000):
            through.objects.bulk_create(
                [through(miningrun_id=run.pk, sourcedocument_id=pk) for pk in pks[start : start + 5000]]
            )
        mining_run_start(run=run, created_by=created_by, enqueue=enqueue)
    return run


def select_documents(config: RunConfig, documents: QuerySet[SourceDocument] | None = None) -> list[int]:
    """The candidate documents: per topic, all of them, or the first candidates_per_topic in the order they
    were imported (the reference takes the first N of each topic in file order), or with
    sample_candidates a sample of that many drawn with the seed."""
    queryset = documents if documents is not None else SourceDocument.objects.all()
    if config.topics:
        queryset = queryset.filter(topic__name__in=config.topics)
    by_topic: dict[int | None, list[int]] = defaultdict(list)
    for topic_id, pk in queryset.order_by("pk").values_list("topic_id", "pk").iterator(chunk_size=10_000):
        by_topic[topic_id].append(pk)
    rng = random.Random(config.seed)
    chosen: list[int] = []
    cap = config.candidates_per_topic
    for topic in sorted(by_topic, key=lambda t: -1 if t is None else t):
        in_topic = by_topic[topic]
        if cap is None or len(in_topic) <= cap:
            chosen.extend(in_topic)
        else:
            chosen.extend(rng.sample(in_topic, cap) if config.sample_candidates else in_topic[:cap])
    return sorted(chosen)


def mining_run_start(
    *, run: MiningRun, created_by: User | None = None, enqueue: bool = True, resend_failed: bool = False
) -> Job:
    """A new MINE job executing (or resuming) the run: only what has no outcome yet is sent. With
    resend_failed, an unparsable answer stored for the same request is not reused but asked again."""
    if is_synthetic(run.name):
        raise SyntheticRun(
            f"mining run {run.pk} ({run.name}) is synthetic demo data written by demo_setup: it is not run; "
            f"start a new run from a config instead"
        )
    config = run_config_from_mapping(run.config, source=f"mining run {run.pk}")
    if run.job_id and Job.objects.filter(pk=run.job_id).active().exists():
        raise RunBusy(f"mining run {run.pk} already has job {run.job_id} queued or running: cancel it first")
    backends = {config.stage_config(stage).backend for stage in LLM_STAGES}
    parameters: dict[str, Any] = {"run": run.pk, "backend": "vllm" if "vllm" in backends else "openai"}
    if resend_failed:
        parameters["resend_failed"] = True
    with transaction.atomic():  # the run names its job before a worker can pick the job up
        job = job_create(
            kind=MINE,
            parameters=parameters,
            total=run.documents.count(),
            created_by=created_by,
            enqueue=enqueue,
        )
        MiningRun.objects.filter(pk=run.pk).update(
            job=job, status=RunStatus.QUEUED, updated_at=timezone.now()
        )
    run.job, run.status = job, RunStatus.QUEUED
    return job


def mining_run_rerun_stage(
    *,
    run: MiningRun,
    stage: str,
    config: Mapping[str, Any] | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    """Run `stage` again for the run (optionally with a new run config, e.g. another prompt_path or model
    for that stage): its outcomes and those of every later stage are deleted, so is each procedure the run
    made that is still in the pool; then the run starts again from that stage."""
    if stage not in STAGE_ORDER:
        raise ValueError(f"unknown stage {stage!r}: expected one of {', '.join(STAGE_ORDER)}")
    with transaction.atomic():
        run = MiningRun.objects.select_for_update().get(pk=run.pk)
        if config is not None:
            run.config = run_config_from_mapping(config, source=f"mining run {run.pk}").data
            run.save(update_fields=["config", "updated_at"])
        mining_run_invalidate(run=run, stage=stage)
        return mining_run_start(run=run, created_by=created_by, enqueue=enqueue)


def mining_run_invalidate(*, run: MiningRun, stage: str) -> int:
    """Delete the outcomes of `stage` and the stages after it, and the run's procedures still in the pool.
    Refused while a job of the run is queued or running."""
    if run.job_id and Job.objects.filter(pk=run.job_id).active().exists():
        raise RunBusy(f"mining run {run.pk} has job {run.job_id} queued or running: cancel it first")
    later = STAGE_ORDER[STAGE_ORDER.index(stage) :]
    kept = list(run.kept_procedures.values_list("pk", flat=True))
    MiningRun.kept_procedures.through.objects.filter(miningrun=run).delete()
    Procedure.objects.filter(pk__in=kept, split=Split.POOL, mining_runs=None).delete()
    deleted, _ = StageOutcome.objects.filter(run=run, stage__in=later).delete()
    return deleted


def mining_run_retry_errors(*, run: MiningRun, created_by: User | None = None, enqueue: bool = True) -> Job:
    """Start the run again after deleting its failed outcomes (API errors, unparsable answers): they are
    sent again, not answered from another run's unparsable answer to the same request."""
    with transaction.atomic():
        StageOutcome.objects.filter(run=run).exclude(error="").delete()
        return mining_run_start(run=run, created_by=created_by, enqueue=enqueue, resend_failed=True)


# --- running ---------------------------------------------------------------------------------------------


def mine_job_run(*, job_id: int, backends: Mapping[str, LLMBackend] | None = None) -> Job | None:
    """Run or resume a MINE job. `backends` (stage -> backend) is for callers that bring their own."""
    return job_run(job_id, MINE, lambda job: MineWork(job, backends or {}))


def prefilter_stage_run(*, run: MiningRun) -> int:
    """The heuristics filter over every document of the run waiting for it; the number of outcomes written."""
    config = run_config_from_mapping(run.config, source=f"mining run {run.pk}")
    pending = pending_documents(run, Stage.PREFILTER)
    for start in range(0, len(pending), PREFILTER_CHUNK):
        _prefilter_chunk(run, config, pending[start : start + PREFILTER_CHUNK])
        reset_queries()  # with DEBUG on, Django would keep every query of a long job
    return len(pending)


def _prefilter_chunk(run: MiningRun, config: RunConfig, pks: Sequence[int]) -> None:
    rows = StageOutcome.objects.filter(run=run, document_id__in=pks, stage=Stage.EXTRACTION)
    steps_of = dict(rows.values_list("document_id", "payload__steps"))
    outcomes = []
    for pk in pks:
        steps = steps_of.get(pk) or []
        verdict = prefilter_steps(steps, config.prefilter)
        outcomes.append(
            StageOutcome(
                run=run,
                document_id=pk,
                stage=Stage.PREFILTER,
                passed=verdict.passed,
                reason=verdict.reason,
                payload=verdict.payload(len(steps)),
            )
        )
    with transaction.atomic():
        outcomes_insert(outcomes)


_COPY_COLUMNS = (
    "run_id",
    "document_id",
    "stage",
    "passed",
    "reason",
    "payload",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "raw_output",
    "error",
    "request_sha256",
    "reused",
)


def outcomes_insert(outcomes: Sequence[StageOutcome]) -> None:
    """Insert new outcomes in bulk: COPY on PostgreSQL (a stage's outcomes are only written by the job
    holding the run's lock, so they cannot exist yet), bulk_create elsewhere."""
    if connection.vendor != "postgresql":
        StageOutcome.objects.bulk_create(outcomes, batch_size=2000, ignore_conflicts=True)
        return
    from psycopg.types.json import Jsonb

    columns = ", ".join([*_COPY_COLUMNS, "created_at"])
    now = timezone.now()
    with (
        connection.cursor() as cursor,
        cursor.copy(f"COPY {StageOutcome._meta.db_table} ({columns}) FROM STDIN") as copy,
    ):
        for o in outcomes:
            copy.write_row(
                (
                    o.run_id,
                    o.document_id,
                    o.stage,
                    o.passed,
                    o.reason,
                    Jsonb(o.payload),
                    o.prompt_tokens,
                    o.completion_tokens,
                    o.cost,
                    o.raw_output,
                    o.error,
                    o.request_sha256,
                    o.reused,
                    now,
                )
            )


def pending_documents(run: MiningRun, stage: str) -> list[int]:
    """Document pks that reached `stage` (passed the one before) and have no outcome at it yet."""
    has_outcome = StageOutcome.objects.filter(run=run, stage=stage, document_id=OuterRef("pk"))
    if stage == Stage.EXTRACTION:
        documents = run.documents.all()
    else:
        before = STAGE_ORDER[STAGE_ORDER.index(stage) - 1]
        passed = StageOutcome.objects.filter(run=run, stage=before, passed=True, document_id=OuterRef("pk"))
        documents = SourceDocument.objects.filter(Exists(passed))
    return list(documents.exclude(Exists(has_outcome)).order_by("pk").values_list("pk", flat=True))


def stage_inputs(run: MiningRun, stage: str, pks: Sequence[int]) -> dict[int, dict[str, Any]]:
    """What `stage` reads for each document: the goal and steps (and resources) earlier stages produced."""
    inputs: dict[int, dict[str, Any]] = defaultdict(dict)
    rows = StageOutcome.objects.filter(run=run, document_id__in=pks, stage__in=INPUT_STAGES[stage])
    for document_id, source, payload in rows.values_list("document_id", "stage", "payload"):
        if source == Stage.RESOURCES:
            inputs[document_id]["resources"] = payload.get("resources", [])
        else:
            inputs[document_id] |= {"goal": payload.get("goal", ""), "steps": payload.get("steps", [])}
    return inputs


def run_counts(run: MiningRun) -> tuple[int, int]:
    """(documents finished cleanly, documents that failed with an error), from the outcomes."""
    terminal = StageOutcome.objects.filter(run=run).filter(Q(passed=False) | Q(stage=Stage.FINAL_FILTER))
    counts = terminal.aggregate(
        finished=Count("document_id", distinct=True),
        failed=Count("document_id", filter=~Q(error=""), distinct=True),
    )
    return counts["finished"] - counts["failed"], counts["failed"]


class MineWork(JobWork):
    """One execution of a run: the stages in order, stopping early when the job is cancelled. Progress is the
    run's documents finished cleanly / failed, read off the outcomes."""

    def __init__(self, job: Job, backends: Mapping[str, LLMBackend]) -> None:
        super().__init__(job)
        self.run_row = MiningRun.objects.filter(pk=job.parameters.get("run")).first()
        self.backends = backends

    def run(self) -> None:
        if self.run_row is None:
            self.failure = "the mining run was deleted"
            return
        config = run_config_from_mapping(self.run_row.config, source=f"mining run {self.run_row.pk}")
        self.write_progress(force=True)
        for stage in STAGE_ORDER:
            if self.should_stop():
                break
            if stage == Stage.PREFILTER:
                prefilter_stage_run(run=self.run_row)
            else:
                _LLMStage(self, self.run_row, config, stage).run()
            self.write_progress(force=True)

    def started(self) -> None:
        if self.run_row is not None:
            MiningRun.objects.filter(pk=self.run_row.pk).update(
                status=RunStatus.RUNNING, updated_at=timezone.now()
            )

    def finished(self, status: str) -> None:
        if self.run_row is not None:
            MiningRun.objects.filter(pk=self.run_row.pk, job=self.job).update(
                status=_JOB_TO_RUN_STATUS.get(status, RunStatus.FAILED), updated_at=timezone.now()
            )
        if status == JobStatus.SUCCEEDED:
            embed_after(PROCEDURES)  # the mined procedures' vectors

    def summary(self) -> str:
        return f"{self.job.failed} document(s) failed" if self.job.failed else ""

    def write_progress(self, *, force: bool = False) -> None:
        if self.run_row is not None:
            self.progress.done, self.progress.failed = run_counts(self.run_row)
        super().write_progress(force=force)


class _LLMStage:
    """One LLM stage: pending documents -> answers reused where the same request was answered before ->
    a lazy stream of the other requests -> outcomes written a few at a time."""

    def __init__(self, work: MineWork, run: MiningRun, config: RunConfig, stage: str) -> None:
        self.work = work
        self.run_row = run
        self.config = config
        self.stage = stage
        self.model_config = config.stage_config(stage)
        self.template = self.model_config.prompt_text()
        self.price = config.price_for(self.model_config.model)
        self.in_flight: dict[int, dict[str, Any]] = {}
        self.request_shas: dict[int, str] = {}
        self.reuse_unparsable = not work.job.parameters.get("resend_failed")

    def run(self) -> None:
        pending = pending_documents(self.run_row, self.stage)
        to_send = [pk for start in range(0, len(pending), FETCH_CHUNK) for pk in self.settle(pending, start)]
        if not to_send:
            return
        self.work.stream(
            chunked_requests(to_send, self.fetch),
            store=self.store,
            backend_config=self.model_config.backend_config(),
            backend=self.work.backends.get(self.stage),
            count=False,
        )

    def settle(self, pending: Sequence[int], start: int) -> list[int]:
        """Write the outcomes of one chunk of pending documents that need no request (an answer stored for
        the same request, by any run; the filter's rejection of an empty goal); the pks still to send."""
        if self.work.should_stop():
            return []
        outcomes, inputs, to_send = [], {}, []
        chunk = self.inputs(pending[start : start + FETCH_CHUNK])
        shas = {pk: self.request_sha(self.request(pk, inputs)) for pk, inputs in chunk.items()}
        answers = _stored_answers(set(shas.values()), with_unparsable=self.reuse_unparsable)
        for pk, document_inputs in chunk.items():
            answer = answers.get(shas[pk])
            if self.stage == Stage.FILTER and not str(document_inputs.get("goal", "")).strip():
                outcomes.append(self.no_request_outcome(pk, EMPTY_GOAL))
            elif answer is not None:
                outcomes.append(self.reused_outcome(pk, answer))
                inputs[pk] = document_inputs
            else:
                to_send.append(pk)
        with transaction.atomic():
            outcomes_insert(outcomes)
            if self.stage == Stage.FINAL_FILTER:
                _store_procedures(self.run_row, [o for o in outcomes if o.passed], inputs)
        self.work.write_progress()  # at most every PROGRESS_WRITE_S: reused answers show progress too
        return to_send

    def request(self, pk: int, inputs: dict[str, Any]) -> LLMRequest:
        prompt = stage_prompt(self.template, self.stage, inputs)
        return stage_request(self.model_config, self.stage, key=str(pk), prompt=prompt)

    def request_sha(self, request: LLMRequest) -> str:
        return request_sha256(self.model_config, self.stage, request)

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        requests = []
        for pk, inputs in self.inputs(pks).items():
            self.in_flight[pk] = inputs
            request = self.request(pk, inputs)
            self.request_shas[pk] = self.request_sha(request)
            requests.append(request)
        return requests

    def inputs(self, pks: Sequence[int]) -> dict[int, dict[str, Any]]:
        if self.stage == Stage.EXTRACTION:
            limit = self.config.max_document_chars
            texts = SourceDocument.objects.filter(pk__in=pks).values_list("pk", "text")
            return {pk: {"document": text[:limit] if limit else text} for pk, text in sorted(texts)}
        inputs = stage_inputs(self.run_row, self.stage, pks)
        return {pk: inputs[pk] for pk in pks if pk in inputs}

    def store(self, results: Sequence[LLMResult]) -> None:
        outcomes = [self.outcome(result) for result in results]
        with transaction.atomic():
            outcomes_insert(outcomes)
            if self.stage == Stage.FINAL_FILTER:
                _store_procedures(self.run_row, [o for o in outcomes if o.passed], self.in_flight)
        for result in results:
            self.in_flight.pop(int(result.key), None)
            self.request_shas.pop(int(result.key), None)

    def outcome(self, result: LLMResult) -> StageOutcome:
        if result.ok:
            verdict = parse_stage_output(self.stage, result.text)
        else:
            verdict = StageVerdict(
                False, f"API error: {result.error}", error=result.error or "request failed"
            )
        return StageOutcome(
            run=self.run_row,
            document_id=int(result.key),
            stage=self.stage,
            passed=verdict.passed,
            reason=verdict.reason,
            payload=verdict.payload,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost=self.price.cost(result.prompt_tokens, result.completion_tokens),
            raw_output=result.text or "",
            error=verdict.error,
            request_sha256=self.request_shas.get(int(result.key), ""),
        )

    def reused_outcome(self, pk: int, answer: StageOutcome) -> StageOutcome:
        """The stored answer to the same request, read again by this stage (its tokens as they were)."""
        verdict = parse_stage_output(self.stage, answer.raw_output)
        return StageOutcome(
            run=self.run_row,
            document_id=pk,
            stage=self.stage,
            passed=verdict.passed,
            reason=verdict.reason,
            payload=verdict.payload,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            cost=self.price.cost(answer.prompt_tokens, answer.completion_tokens),
            raw_output=answer.raw_output,
            error=verdict.error,
            request_sha256=answer.request_sha256,
            reused=True,
        )

    def no_request_outcome(self, pk: int, reason: str) -> StageOutcome:
        return StageOutcome(run=self.run_row, document_id=pk, stage=self.stage, passed=False, reason=reason)


def _stored_answers(shas: set[str], *, with_unparsable: bool) -> dict[str, StageOutcome]:
    """The stored answer to each request identity in `shas`: one the model gave (an API error is none), the
    first that parsed, else the first unparsable one when `with_unparsable` (the reference keeps those too;
    retrying errors asks again)."""
    answers: dict[str, StageOutcome] = {}
    rows = StageOutcome.objects.filter(request_sha256__in=shas).exclude(raw_output="")
    if not with_unparsable:
        rows = rows.filter(error="")
    rows = rows.only("request_sha256", "raw_output", "prompt_tokens", "completion_tokens", "error")
    for row in rows.order_by("pk"):
        kept = answers.get(row.request_sha256)
        if kept is None or (kept.error and not row.error):
            answers[row.request_sha256] = row
    return answers


def _store_procedures(
    run: MiningRun, passed: Sequence[StageOutcome], inputs: Mapping[int, dict[str, Any]]
) -> None:
    """Each final-validation pass as a pool Procedure kept by the run. A source_example_id already stored
    with the same content (topic, goal, steps, resources) is kept by this run too; one stored with other
    content is never overwritten (selectors.run_unstored lists it)."""
    if not passed:
        return
    documents = SourceDocument.objects.in_bulk([o.document_id for o in passed])
    procedures = {
        documents[o.document_id].doc_id: Procedure(
            source_example_id=documents[o.document_id].doc_id,
            topic_id=documents[o.document_id].topic_id,
            goal=inputs[o.document_id]["goal"],
            steps=inputs[o.document_id]["steps"],
            resources=inputs[o.document_id].get("resources", []),
            url=documents[o.document_id].url,
            source_text=documents[o.document_id].text,
            split=Split.POOL,
            mining_run=run,
            source_document=documents[o.document_id],
            ordered=_sequential(o.payload),
        )
        for o in passed
    }
    Procedure.objects.bulk_create(procedures.values(), ignore_conflicts=True)
    stored = Procedure.objects.filter(source_example_id__in=procedures).only(
        "source_example_id", "topic_id", "goal", "steps", "resources"
    )
    through = MiningRun.kept_procedures.through
    links = [
        through(procedure_id=p.pk, miningrun_id=run.pk)
        for p in stored
        if _same_content(p, procedures[p.source_example_id])
    ]
    unstored = len(procedures) - len(links)
    if unstored:
        logger.warning("mining run %s: %d final pass(es) already stored with other content", run.pk, unstored)
    through.objects.bulk_create(links, ignore_conflicts=True)


def _same_content(stored: Procedure, mined: Procedure) -> bool:
    return (stored.topic_id, stored.goal, stored.steps, stored.resources) == (
        mined.topic_id,
        mined.goal,
        mined.steps,
        mined.resources,
    )


def _sequential(payload: Mapping[str, Any]) -> bool | None:
    """The final filter's "sequential" verdict (must the steps be done in this order?): True for "yes",
    False for "no", None when the payload has none. A pass needs every answer "yes", so stored procedures
    get True; reading it keeps that true if the pass rule changes."""
    answer = payload.get("sequential")
    answer = answer.get("answer") if isinstance(answer, Mapping) else answer
    return {"yes": True, "no": False}.get(answer) if isinstance(answer, str) else None
