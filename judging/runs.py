"""Running the benchmark as jobs: generate L2 (generator x procedures) and judge them (judge x generations).

The admin, the API, the `generate` / `judge` commands and the Celery tasks all call these services.

How a job runs (generate_job_run / judge_job_run, called by the thin tasks in tasks.py):
- The item set is fixed when the job is created (parameters["items"]: procedure or generation pks).
- Requests are built lazily, a bounded chunk of rows at a time, and streamed to the backend; results are
  written as they arrive, grouped into short transactions (at most FLUSH_MAX results, at most ~FLUSH_S after
  the first; a Generation / Judgment upsert on its unique constraint, judging/results.py), so nothing waits
  for a batch to end and a crash loses at most a second of results and the requests in flight.
- Resumable: a job redelivered after a crash (the task is acks_late) or re-enqueued by a starting worker
  (resume_orphaned_jobs) recomputes done/failed from the rows and runs only what is still missing. "Done by
  this job" is read off the rows: for mode missing any good row counts, for parse_failed / replace a row
  written since the job first started.
- One runner at a time: a PostgreSQL session advisory lock on the job is held while it runs; a second delivery
  of the same job finds it taken and leaves. The lock dies with the worker's connection, which is how a
  starting worker knows a RUNNING job is orphaned. (SQLite, the one-worker laptop setup, has no such lock:
  there a starting worker resumes every RUNNING job.)
- Cancellable: should_stop reads the Job status at most once a second; cancelling stops new requests.
- Errors: the backend retries what is transient; what still fails is stored per item (Generation.error,
  Judgment.error with parse_failed) and counted in job.failed; job_retry_failed makes a job over those items.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from mining.models import Procedure

from .configs import ModelConfig, config_for_generator, config_for_judge
from .llm.base import LLMBackend, LLMRequest, LLMResult, backend_from_config
from .models import Generation, Generator, Job, JobKind, JobStatus, Judge, Judgment
from .prompting import clean_steps, generation_prompt, generation_request, judge_prompt, judge_request
from .results import generations_store, judgments_store

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

JudgeMode = Literal["missing", "parse_failed", "replace"]
JUDGE_MODES: tuple[str, ...] = ("missing", "parse_failed", "replace")
FETCH_CHUNK = 256  # rows read per query while building requests
FLUSH_MAX = 32  # results written per transaction at most
FLUSH_S = 0.25  # ... and at the latest this long after the first of them arrived
STOP_CHECK_S = 1.0
PROGRESS_WRITE_S = 0.5
MAX_ERRORS_KEPT = 20
GPU_QUEUE = "gpu"
DEFAULT_QUEUE = "default"
ADVISORY_LOCK_CLASS = 0x48_32_45  # "H2E": first key of the two-int advisory lock, the job pk the second


# --- creating, cancelling, retrying ------------------------------------------------------------------------


def generate_job_create(
    *,
    generator: Generator,
    split: str | None = "bench",
    procedure_ids: list[int] | None = None,
    limit: int | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    """A job generating L2 with `generator` for the procedures of `split` (and/or `procedure_ids`), first
    `limit` by id, that have no good L2 from it yet. Enqueued once the surrounding transaction commits
    (enqueue=False: not at all, for a caller that runs it in-process with generate_job_run)."""
    config = config_for_generator(generator)  # fails now, not on the worker, for an imported generator
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number, got {limit}")
    procedures = Procedure.objects.all()
    if split:
        procedures = procedures.filter(split=split)
    if procedure_ids is not None:
        procedures = procedures.filter(pk__in=procedure_ids)
    good_l2 = Generation.objects.filter(generator=generator, procedure=OuterRef("pk"), error="")
    procedures = procedures.exclude(Exists(good_l2)).order_by("pk")
    pks = procedures.values_list("pk", flat=True)
    items = list(pks[:limit] if limit else pks)
    parameters = {
        "generator": generator.pk,
        "generator_id": generator.generator_id,
        "split": split,
        "procedure_ids": procedure_ids,
        "limit": limit,
        "backend": config.backend,
        "items": items,
    }
    return _create_job(JobKind.GENERATE, parameters, total=len(items), created_by=created_by, enqueue=enqueue)


def judge_job_create(
    *,
    judge: Judge,
    generator: Generator | None = None,
    generation_ids: list[int] | None = None,
    mode: JudgeMode = "missing",
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    """A job judging generations (of `generator` and/or `generation_ids`) with `judge`.

    mode missing: those without a judgment by this judge; parse_failed: those whose judgment is a parse
    failure or an API error; replace: all of them, each old judgment replaced when its new one is written.
    Generations that failed (no L2) are never judged."""
    if mode not in JUDGE_MODES:
        raise ValueError(f"unknown judge mode {mode!r}: expected missing, parse_failed or replace")
    if generator is None and generation_ids is None:
        raise ValueError("judge what? give a generator or generation_ids")
    config = config_for_judge(judge)
    generations = Generation.objects.filter(error="")
    if generator is not None:
        generations = generations.filter(generator=generator)
    if generation_ids is not None:
        generations = generations.filter(pk__in=generation_ids)
    if mode == "missing":
        generations = generations.exclude(judgments__judge=judge)
    elif mode == "parse_failed":
        generations = generations.filter(judgments__judge=judge, judgments__parse_failed=True)
    items = list(generations.order_by("pk").values_list("pk", flat=True))
    parameters = {
        "judge": judge.pk,
        "judge_id": judge.judge_id,
        "generator": generator.pk if generator else None,
        "generator_id": generator.generator_id if generator else None,
        "generation_ids": generation_ids,
        "mode": mode,
        "backend": config.backend,
        "items": items,
    }
    return _create_job(JobKind.JUDGE, parameters, total=len(items), created_by=created_by, enqueue=enqueue)


def job_cancel(*, job: Job) -> Job:
    """Cancel a queued or running job: a running one stops starting requests within about a second."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        status=JobStatus.CANCELLED, finished_at=now, updated_at=now
    )
    job.refresh_from_db()
    return job


def job_retry_failed(*, job: Job) -> Job:
    """A new job over the items of `job` that failed (API errors after retries)."""
    params = job.parameters
    items = params.get("items", [])
    if job.kind == JobKind.GENERATE:
        generator = Generator.objects.get(pk=params["generator"])
        failed = list(
            Generation.objects.filter(generator=generator, procedure_id__in=items)
            .exclude(error="")
            .values_list("procedure_id", flat=True)
        )
        return generate_job_create(
            generator=generator, split=None, procedure_ids=failed, created_by=job.created_by
        )
    if job.kind == JobKind.JUDGE:
        judge = Judge.objects.get(pk=params["judge"])
        failed = list(
            Judgment.objects.filter(judge=judge, generation_id__in=items)
            .exclude(error="")
            .values_list("generation_id", flat=True)
        )
        return judge_job_create(
            judge=judge, generation_ids=failed, mode="parse_failed", created_by=job.created_by
        )
    raise ValueError(f"a {job.kind} job cannot be retried this way")


def job_queue(job: Job) -> str:
    """vLLM jobs go to the `gpu` queue (a worker with the engine), everything else to `default`."""
    return GPU_QUEUE if job.parameters.get("backend") == "vllm" else DEFAULT_QUEUE


def job_eta(job: Job, *, now: datetime.datetime | None = None) -> datetime.datetime | None:
    """When a running job should finish, from its rate so far (None until it has done something)."""
    seconds = job_seconds_remaining(job, now=now)
    if seconds is None:
        return None
    return (now or timezone.now()) + datetime.timedelta(seconds=seconds)


def job_seconds_remaining(job: Job, *, now: datetime.datetime | None = None) -> float | None:
    processed = job.done + job.failed
    if job.status != JobStatus.RUNNING or job.started_at is None or processed == 0:
        return None
    elapsed = ((now or timezone.now()) - job.started_at).total_seconds()
    # Resumed jobs count rows done before the crash; the rate is still a fair estimate.
    return max(0.0, elapsed / processed * (job.total - processed))


def resume_orphaned_jobs() -> list[int]:
    """Re-enqueue generate/judge jobs left RUNNING by a worker that died (no one holds their lock).
    Called when a worker starts; a job still running elsewhere is left alone."""
    resumed = []
    running = Job.objects.filter(status=JobStatus.RUNNING, kind__in=[JobKind.GENERATE, JobKind.JUDGE])
    for job in running:
        with job_lock(job.pk) as held:
            if not held:
                continue
        logger.warning("job %s was left running by a worker that died: resuming it", job.pk)
        _enqueue(job.pk, job.kind, job_queue(job))
        resumed.append(job.pk)
    return resumed


def _create_job(
    kind: str, parameters: dict[str, Any], *, total: int, created_by: User | None, enqueue: bool
) -> Job:
    job = Job.objects.create(kind=kind, parameters=parameters, total=total, created_by=created_by)
    if enqueue:
        queue = job_queue(job)
        transaction.on_commit(lambda: _enqueue(job.pk, kind, queue))
    return job


def _enqueue(job_pk: int, kind: str, queue: str) -> None:
    from .tasks import run_generate_job, run_judge_job

    task = run_generate_job if kind == JobKind.GENERATE else run_judge_job
    result = task.apply_async(args=[job_pk], queue=queue)
    Job.objects.filter(pk=job_pk).update(celery_task_id=result.id or "")


# --- running ----------------------------------------------------------------------------------------------


def generate_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a generate job. `backend` is for callers that bring their own (benchmarks)."""
    return _run(job_id, JobKind.GENERATE, _GenerateRun, backend)


def judge_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a judge job."""
    return _run(job_id, JobKind.JUDGE, _JudgeRun, backend)


def _run(job_id: int, kind: str, runner_class: type[_Run], backend: LLMBackend | None) -> Job | None:
    with job_lock(job_id) as held:
        if not held:
            logger.warning("job %s is being run by another worker; leaving it", job_id)
            return None
        job = Job.objects.filter(pk=job_id, kind=kind).first()
        if job is None or job.is_finished:
            logger.info("job %s is gone or finished; nothing to do", job_id)
            return job
        _mark_running(job)
        try:
            runner = runner_class(job)
            runner.run(backend)
        except Exception as exc:
            logger.exception("job %s failed", job_id)
            _finish(job, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
            raise
        job.refresh_from_db()
        return job


def _mark_running(job: Job) -> None:
    now = timezone.now()
    job.started_at = job.started_at or now
    job.status = JobStatus.RUNNING
    Job.objects.filter(pk=job.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        status=JobStatus.RUNNING, started_at=job.started_at, updated_at=now
    )


def _finish(job: Job, status: str, *, error: str = "") -> None:
    now = timezone.now()
    Job.objects.filter(pk=job.pk).exclude(status=JobStatus.CANCELLED).update(
        status=status, error=error, finished_at=now, updated_at=now
    )


@contextmanager
def job_lock(job_pk: int) -> Iterator[bool]:
    """A session advisory lock on the job (PostgreSQL); elsewhere (SQLite) always granted. Every kind of job
    (generate, judge, mine) takes it: job pks are unique across kinds."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [ADVISORY_LOCK_CLASS, job_pk])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [ADVISORY_LOCK_CLASS, job_pk])


@dataclass
class _Progress:
    done: int = 0
    failed: int = 0


class _Run:
    """The loop shared by both kinds: pending items -> a lazy stream of requests -> results written as they
    come, a few at a time.

    Requests are built a chunk of rows at a time as the backend asks for them, so the backend keeps every
    slot busy across the whole job (no idle pool at chunk boundaries). Results are buffered and written in
    one transaction when FLUSH_MAX have arrived or the oldest has waited FLUSH_S (checked on each result and
    each time the backend asks should_stop, at least once a second): results are committed within about a
    second of their arrival, and a crash loses at most those and the requests in flight."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.items: list[int] = list(job.parameters.get("items", []))
        self.started_at = job.started_at or timezone.now()
        self.progress = _Progress()
        self.errors: list[str] = list(job.parameters.get("errors", []))
        self._stop_checked_at = 0.0
        self._stopped = False
        self._written_at = 0.0
        self._buffer: list[LLMResult] = []
        self._buffered_at = 0.0

    # subclasses
    config: ModelConfig

    def pending_and_counts(self) -> tuple[list[int], _Progress]:
        raise NotImplementedError

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        """The requests for these items (rows still present), remembering each row until it is stored."""
        raise NotImplementedError

    def store(self, results: Sequence[LLMResult]) -> None:
        """Write these results (one transaction)."""
        raise NotImplementedError

    # the loop
    def run(self, backend: LLMBackend | None) -> None:
        pending, self.progress = self.pending_and_counts()
        self._write_progress(force=True)
        own_backend = backend is None
        backend = backend or backend_from_config(self.config.backend_config())
        try:
            backend.run(self.requests(pending), self.on_result, should_stop=self.should_stop)
            self.flush()
        finally:
            if own_backend:
                backend.close()
        self._write_progress(force=True)
        if self._stopped:
            return
        error = ""
        if self.progress.failed:
            error = f"{self.progress.failed} item(s) failed; retry them later. " + "\n".join(self.errors[:5])
        _finish(self.job, JobStatus.SUCCEEDED, error=error)

    def requests(self, pending: Sequence[int]) -> Iterator[LLMRequest]:
        for start in range(0, len(pending), FETCH_CHUNK):
            yield from self.fetch(pending[start : start + FETCH_CHUNK])

    def present(self, pks: Sequence[int], rows: dict[int, Any]) -> list[int]:
        """The pks whose rows still exist; one deleted since the job was created counts as failed."""
        for pk in pks:
            if pk not in rows:
                self.progress.failed += 1
                self._keep_error(f"item {pk}: deleted before it was run")
        return [pk for pk in pks if pk in rows]

    def on_result(self, result: LLMResult) -> None:
        if not self._buffer:
            self._buffered_at = time.monotonic()
        self._buffer.append(result)
        if len(self._buffer) >= FLUSH_MAX:
            self.flush()
        else:
            self._flush_if_due()

    def flush(self) -> None:
        """Write the buffered results and count them."""
        results, self._buffer = self._buffer, []
        if not results:
            return
        self.store(results)
        for result in results:
            if result.ok:
                self.progress.done += 1
            else:
                self.progress.failed += 1
                self._keep_error(f"item {result.key}: {result.error}")
        self._write_progress()

    def should_stop(self) -> bool:
        self._flush_if_due()
        if self._stopped:
            return True
        now = time.monotonic()
        if now - self._stop_checked_at >= STOP_CHECK_S:
            self._stop_checked_at = now
            status = Job.objects.filter(pk=self.job.pk).values_list("status", flat=True).first()
            self._stopped = status != JobStatus.RUNNING
        return self._stopped

    def _flush_if_due(self) -> None:
        if self._buffer and time.monotonic() - self._buffered_at >= FLUSH_S:
            self.flush()

    def _keep_error(self, message: str) -> None:
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(message)

    def _write_progress(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._written_at < PROGRESS_WRITE_S:
            return
        self._written_at = now
        parameters = {**self.job.parameters, "errors": self.errors}
        Job.objects.filter(pk=self.job.pk).update(
            done=self.progress.done,
            failed=self.progress.failed,
            parameters=parameters,
            updated_at=timezone.now(),
        )


class _GenerateRun(_Run):
    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.generator = Generator.objects.get(pk=job.parameters["generator"])
        self.config = config_for_generator(self.generator)
        self.template = self.config.prompt_text()
        self.in_flight: dict[int, tuple[Procedure, str]] = {}  # procedure pk -> (procedure, prompt)

    def pending_and_counts(self) -> tuple[list[int], _Progress]:
        rows = dict(
            Generation.objects.filter(generator=self.generator, procedure_id__in=self.items).values_list(
                "procedure_id", "error"
            )
        )
        written_since = set(
            Generation.objects.filter(
                generator=self.generator, procedure_id__in=self.items, updated_at__gte=self.started_at
            ).values_list("procedure_id", flat=True)
        )
        progress = _Progress()
        pending = []
        for pk in self.items:
            if pk in rows and rows[pk] == "":
                progress.done += 1
            elif pk in written_since:
                progress.failed += 1
            else:
                pending.append(pk)
        return pending, progress

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        procedures = Procedure.objects.in_bulk(list(pks))
        requests = []
        for pk in self.present(pks, procedures):
            procedure = procedures[pk]
            n = len(procedure.steps)
            prompt = generation_prompt(self.template, goal=procedure.goal, resources=procedure.resources, n=n)
            self.in_flight[pk] = (procedure, prompt)
            requests.append(generation_request(self.config, key=str(pk), prompt=prompt, n_steps=n))
        return requests

    def store(self, results: Sequence[LLMResult]) -> None:
        rows = [(*self.in_flight.pop(int(result.key)), result) for result in results]
        generations_store(generator=self.generator, results=rows)


class _JudgeRun(_Run):
    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.judge = Judge.objects.get(pk=job.parameters["judge"])
        self.mode: JudgeMode = job.parameters.get("mode", "missing")
        self.config = config_for_judge(self.judge)
        self.template = self.config.prompt_text()
        self.in_flight: dict[int, Generation] = {}

    def pending_and_counts(self) -> tuple[list[int], _Progress]:
        rows = {
            gid: (error, updated_at)
            for gid, error, updated_at in Judgment.objects.filter(
                judge=self.judge, generation_id__in=self.items
            ).values_list("generation_id", "error", "updated_at")
        }
        progress = _Progress()
        pending = []
        for pk in self.items:
            row = rows.get(pk)
            written_since = row is not None and row[1] >= self.started_at
            if row is not None and row[0] == "" and (written_since or self.mode == "missing"):
                progress.done += 1
            elif written_since:
                progress.failed += 1
            else:
                pending.append(pk)
        return pending, progress

    def fetch(self, pks: Sequence[int]) -> list[LLMRequest]:
        generations = Generation.objects.select_related("procedure").in_bulk(list(pks))
        requests = []
        for pk in self.present(pks, generations):
            generation = generations[pk]
            l1, l2 = clean_steps(generation.procedure.steps), clean_steps(generation.predicted_steps)
            prompt = judge_prompt(self.template, goal=generation.procedure.goal, reference_steps=l1, steps=l2)
            self.in_flight[pk] = generation
            requests.append(
                judge_request(self.config, key=str(pk), prompt=prompt, n_l1=len(l1), n_l2=len(l2))
            )
        return requests

    def store(self, results: Sequence[LLMResult]) -> None:
        rows = [(self.in_flight.pop(int(result.key)), result) for result in results]
        judgments_store(judge=self.judge, results=rows, keep_good=True)
