"""The one run loop every kind of LLM work plugs into, whichever app registers it.

job_run(job_id, kind, work) claims a job and runs it:
- One runner at a time: the job's advisory lock (locks.py) is held while it runs; a second delivery of the
  same job finds it taken and leaves.
- The job is marked RUNNING (started_at kept from a first start), then `work(job).run()` does the work and the
  job is finished: SUCCEEDED, CANCELLED when it stopped because the row was cancelled, FAILED on an exception
  (which is re-raised for Celery to log). A job already finished or deleted is left alone.
- Resumable: the work decides what is still to do from the rows it writes, so a job redelivered after a crash
  (the tasks are acks_late) or re-enqueued by a starting worker (services.resume_orphaned_jobs) sends only
  what is missing.

JobWork is the base a kind subclasses. Its `stream()` sends a lazy stream of requests to a backend and writes
the results as they come, a few at a time: buffered and handed to the kind's `store` in one transaction when
FLUSH_MAX have arrived or the oldest has waited FLUSH_S (checked on each result and each time the backend asks
should_stop, at least once a second). Results are committed within about a second of their arrival, and a
crash loses at most those and the requests in flight. `should_stop` reads the job's status at most once a
second: cancelling stops new requests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import reset_queries
from django.utils import timezone

from h2e_site.llm.backends import backend_from_config
from h2e_site.llm.base import BackendConfig, LLMBackend, LLMRequest, LLMResult

from .locks import job_lock
from .models import Job, JobStatus

logger = logging.getLogger(__name__)

FETCH_CHUNK = 256  # item rows read per query while building requests
FLUSH_MAX = 32  # results written per transaction at most
FLUSH_S = 0.25  # ... and at the latest this long after the first of them arrived
STOP_CHECK_S = 1.0
HEARTBEAT_S = 20.0  # a running job touches its row at least this often (services.jobs_sweep_stale)
PROGRESS_WRITE_S = 0.5
MAX_ERRORS_KEPT = 20


@dataclass
class Progress:
    done: int = 0
    failed: int = 0


@dataclass
class Usage:
    """What the answered requests of a job cost, kept in its parameters["usage"] (the job record): how many
    were answered, their prompt and completion tokens (as the server reported them; requests whose server
    reported none are counted in n_without_tokens) and the seconds spent waiting on the model."""

    n: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    n_without_tokens: int = 0
    latency_s: float = 0.0

    @classmethod
    def of(cls, job: Job) -> Usage:
        saved = job.parameters.get("usage") or {}
        return cls(**{name: saved[name] for name in cls.__dataclass_fields__ if name in saved})

    def add(self, result: LLMResult) -> None:
        self.n += 1
        self.latency_s += result.latency_s
        if result.prompt_tokens is None and result.completion_tokens is None:
            self.n_without_tokens += 1
        self.prompt_tokens += result.prompt_tokens or 0
        self.completion_tokens += result.completion_tokens or 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class JobWork:
    """What one kind of job does. Subclasses implement run() (using stream() for LLM requests) and may
    override started(), finished() and write_progress()."""

    def __init__(self, job: Job, on_progress: Callable[[Job], None] | None = None) -> None:
        self.job = job
        self.on_progress = on_progress  # sees every progress step (a command's bar), written or not
        self.progress = Progress()
        self.errors: list[str] = list(job.parameters.get("errors", []))
        self.usage = Usage.of(job)
        self.stopped = False
        self.failure = ""  # set by run() to fail the job with this message (without an exception)
        self._stop_checked_at = 0.0
        self._progress_written_at = 0.0
        self._heartbeat_at = time.monotonic()

    # --- what a kind supplies ---
    def run(self) -> None:
        raise NotImplementedError

    def started(self) -> None:
        """Called once the job is marked running, before run()."""

    def finished(self, status: str) -> None:
        """Called after the job row got its final status."""

    def summary(self) -> str:
        """The job's error text when it succeeded with failed items ("" when none failed)."""
        if not self.progress.failed:
            return ""
        return f"{self.progress.failed} item(s) failed; retry them later. " + "\n".join(self.errors[:5])

    # --- what the loop gives every kind ---
    def stream(
        self,
        requests: Iterable[LLMRequest],
        *,
        store: Callable[[Sequence[LLMResult]], None],
        backend_config: BackendConfig,
        backend: LLMBackend | None = None,
        count: bool = True,
    ) -> None:
        """Send `requests` (a lazy iterable: built as the backend asks for them) and hand the results to
        `store` a few at a time; with `count`, each result counts as done or failed in self.progress.
        `backend`: one the caller brings (benchmarks), else one made from backend_config and closed after."""
        buffer = _ResultBuffer(self, store, count=count)
        own_backend = backend is None
        backend = backend or backend_from_config(backend_config)
        try:
            backend.run(requests, buffer.add, should_stop=lambda: buffer.flush_if_due() or self.should_stop())
            buffer.flush()
        finally:
            if own_backend:
                backend.close()

    def should_stop(self) -> bool:
        """True once the job is no longer RUNNING (cancelled); reads the row at most once a second."""
        if self.stopped:
            return True
        now = time.monotonic()
        if now - self._stop_checked_at >= STOP_CHECK_S:
            self._stop_checked_at = now
            status = Job.objects.filter(pk=self.job.pk).values_list("status", flat=True).first()
            self.stopped = status != JobStatus.RUNNING
            if not self.stopped and now - self._heartbeat_at >= HEARTBEAT_S:
                self._heartbeat_at = now  # still alive, even while one long request is in flight
                Job.objects.filter(pk=self.job.pk).update(updated_at=timezone.now())
        return self.stopped

    def present(self, pks: Sequence[int], rows: Mapping[int, Any]) -> list[int]:
        """The item pks whose rows still exist; one deleted since the job was created counts as failed."""
        for pk in pks:
            if pk not in rows:
                self.progress.failed += 1
                self.keep_error(f"item {pk}: deleted before it was run")
        return [pk for pk in pks if pk in rows]

    def keep_error(self, message: str) -> None:
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(message)

    def count(self, results: Sequence[LLMResult]) -> None:
        for result in results:
            if result.ok:
                self.progress.done += 1
                self.usage.add(result)
            else:
                self.progress.failed += 1
                self.keep_error(f"item {result.key}: {result.error}")

    def write_progress(self, *, force: bool = False) -> None:
        """Write done / failed and the kept errors to the job row (at most every PROGRESS_WRITE_S); the
        on_progress callback, when given, sees every call."""
        if self.on_progress is not None:
            self.job.done, self.job.failed = self.progress.done, self.progress.failed
            self.on_progress(self.job)
        now = time.monotonic()
        if not force and now - self._progress_written_at < PROGRESS_WRITE_S:
            return
        self._progress_written_at = now
        self._heartbeat_at = now
        self.job.done, self.job.failed = self.progress.done, self.progress.failed
        self.job.parameters = {**self.job.parameters, "errors": self.errors, "usage": self.usage.as_json()}
        Job.objects.filter(pk=self.job.pk).update(
            done=self.job.done,
            failed=self.job.failed,
            parameters=self.job.parameters,
            updated_at=timezone.now(),
        )


class ItemWork(JobWork):
    """A job over a fixed list of items (parameters["items"]), one LLM request per item (a model answering
    each item of a set). A kind supplies which items are still pending (and the counts of those already done
    or failed, read off its rows, so a resumed job sends only what is missing), the requests for a chunk of
    items, and how to store a group of results; `backend_config` and optionally the caller's `backend`."""

    backend: LLMBackend | None = None

    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.items: list[int] = list(job.parameters.get("items", []))

    def backend_config(self) -> BackendConfig:
        raise NotImplementedError

    def pending_and_counts(self) -> tuple[list[int], Progress]:
        raise NotImplementedError

    def fetch(self, pks: Sequence[int]) -> Iterable[LLMRequest]:
        """The requests for these items (those whose rows still exist: see present())."""
        raise NotImplementedError

    def store(self, results: Sequence[LLMResult]) -> None:
        """Write these results, in one transaction."""
        raise NotImplementedError

    def run(self) -> None:
        pending, self.progress = self.pending_and_counts()
        self.write_progress(force=True)
        self.stream(
            chunked_requests(pending, self.fetch),
            store=self.store,
            backend_config=self.backend_config(),
            backend=self.backend,
        )


def chunked_requests(
    pending: Sequence[int], fetch: Callable[[Sequence[int]], Iterable[LLMRequest]], size: int = FETCH_CHUNK
) -> Iterator[LLMRequest]:
    """Requests built a chunk of items at a time, as the backend asks for them: it keeps every slot busy
    across the whole job, and no more than a chunk of rows is held in memory."""
    for start in range(0, len(pending), size):
        yield from fetch(pending[start : start + size])


class _ResultBuffer:
    def __init__(self, work: JobWork, store: Callable[[Sequence[LLMResult]], None], *, count: bool) -> None:
        self.work = work
        self.store = store
        self.count = count
        self.results: list[LLMResult] = []
        self.first_at = 0.0

    def add(self, result: LLMResult) -> None:
        if not self.results:
            self.first_at = time.monotonic()
        self.results.append(result)
        if len(self.results) >= FLUSH_MAX:
            self.flush()
        else:
            self.flush_if_due()

    def flush_if_due(self) -> bool:
        """Flush when the oldest result has waited FLUSH_S. Always False: `or` goes on to the stop check."""
        if self.results and time.monotonic() - self.first_at >= FLUSH_S:
            self.flush()
        return False

    def flush(self) -> None:
        results, self.results = self.results, []
        if not results:
            return
        self.store(results)
        if self.count:
            self.work.count(results)
        reset_queries()  # with DEBUG on, Django would keep every query of a long job
        self.work.write_progress()


def job_run(job_id: int, kind: str, work: Callable[[Job], JobWork]) -> Job | None:
    """Run (or resume) the job `job_id` of `kind` with the work `work(job)` makes; None when another worker
    holds it. The work is made after the job is marked running (its started_at is then known)."""
    with job_lock(job_id) as held:
        if not held:
            logger.warning("job %s is being run by another worker; leaving it", job_id)
            return None
        job = Job.objects.filter(pk=job_id, kind=kind).first()
        if job is None or job.is_finished:
            logger.info("job %s is gone or finished; nothing to do", job_id)
            return job
        job_mark_running(job)
        runner: JobWork | None = None
        try:
            runner = work(job)
            runner.started()
            runner.run()
        except Exception as exc:
            logger.exception("job %s failed", job_id)
            job_finish(job, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
            if runner is not None:
                runner.finished(JobStatus.FAILED)
            raise
        runner.write_progress(force=True)
        if runner.failure:
            job_finish(job, JobStatus.FAILED, error=runner.failure)
        elif runner.stopped:
            job_finish(job, JobStatus.CANCELLED)
        elif runner.progress.failed and not runner.progress.done:
            job_finish(job, JobStatus.FAILED, error=runner.summary())  # every item failed: not a success
        else:
            job_finish(job, JobStatus.SUCCEEDED, error=runner.summary())
        job.refresh_from_db()
        runner.finished(job.status)
        return job


def job_mark_running(job: Job) -> None:
    now = timezone.now()
    job.started_at = job.started_at or now
    job.status = JobStatus.RUNNING
    Job.objects.filter(pk=job.pk).active().update(
        status=JobStatus.RUNNING, started_at=job.started_at, updated_at=now
    )


def job_finish(job: Job, status: str, *, error: str = "") -> None:
    """Give the job its final status (a cancelled job stays cancelled)."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).exclude(status=JobStatus.CANCELLED).update(
        status=status, error=error, finished_at=now, updated_at=now
    )
