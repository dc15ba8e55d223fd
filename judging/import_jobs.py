"""Import jobs: bench files and h2e trees imported by a worker (admin and API), tracked on a Job row."""

from __future__ import annotations

import logging
import pathlib
import time
from typing import TYPE_CHECKING, Literal

from django.db import connection
from django.utils import timezone

from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import job_create, jobs_not_queued
from mining.services import ImportProgress, ImportReport, bench_import

from .h2e_import import h2e_import
from .job_kinds import IMPORT

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)
ImportKind = Literal["bench", "h2e"]
IMPORT_KINDS: tuple[str, ...] = ("bench", "h2e")


def import_job_create(
    *,
    paths: list[pathlib.Path],
    kind: ImportKind,
    split: str = "bench",
    skip_invalid: bool = False,
    created_by: User | None = None,
) -> Job:
    """Create an import Job and enqueue it once the surrounding transaction commits."""
    if kind not in IMPORT_KINDS:
        raise ValueError(f"unknown import kind {kind!r}: expected 'bench' or 'h2e'")
    if not paths:
        raise ValueError("nothing to import: no paths given")
    parameters = {
        "import_kind": kind,
        "paths": [str(p) for p in paths],
        "split": split,
        "skip_invalid": skip_invalid,
    }
    return job_create(kind=IMPORT, parameters=parameters, created_by=created_by)


class JobProgress(ImportProgress):
    """Writes import progress to the Job row: files as total/done/failed, records and bytes in parameters."""

    def __init__(self, job: Job, *, every_seconds: float = 1.0) -> None:
        self.job = job
        self.every_seconds = every_seconds
        self.n_records = 0
        self.bytes_done = 0
        self.bytes_total = 0
        self._saved_at = 0.0

    def start(self, *, files_total: int, bytes_total: int) -> None:
        self.bytes_total = bytes_total
        self.job.total = files_total
        self._save(force=True)

    def records(self, n: int) -> None:
        self.n_records += n
        self._save()

    def file_done(self, *, path: str, ok: bool, size: int) -> None:
        self.bytes_done += size
        if ok:
            self.job.done += 1
        else:
            self.job.failed += 1
        self._save(force=True)

    def close(self) -> None:
        self._save(force=True)

    def _save(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (now - self._saved_at < self.every_seconds or connection.in_atomic_block):
            # Inside a file's transaction an UPDATE would only show at its commit and would hold the Job
            # row's lock meanwhile: record counts are written when the file is done.
            return
        self._saved_at = now
        progress = {"records": self.n_records, "bytes_done": self.bytes_done, "bytes_total": self.bytes_total}
        self.job.parameters = {**self.job.parameters, "progress": progress}
        Job.objects.filter(pk=self.job.pk).update(
            total=self.job.total,
            done=self.job.done,
            failed=self.job.failed,
            parameters=self.job.parameters,
            updated_at=timezone.now(),
        )


def import_job_run(*, job: Job) -> ImportReport:
    """Run an import job's import, recording progress, the report and rejected lines on the Job."""
    params = job.parameters
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now(), error="")
    progress = JobProgress(job)
    paths = [pathlib.Path(p) for p in params.get("paths", [])]
    try:
        with jobs_not_queued() as not_queued:
            report = _run_import(params, paths, progress)
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        _finish(job, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    job.parameters = {**job.parameters, "report": report.as_json()}
    # its embed job, when the broker could not take it: the import is stored, the embed is to run
    lines = report.error_lines() + [f"The import is stored, but {later.error}" for later in not_queued]
    status = JobStatus.SUCCEEDED if report.ok else JobStatus.FAILED
    _finish(job, status, error="\n".join(lines))
    return report


def _run_import(params: dict, paths: list[pathlib.Path], progress: JobProgress) -> ImportReport:
    skip_invalid = bool(params.get("skip_invalid", False))
    if params.get("import_kind") == "h2e":
        if len(paths) != 1:
            raise ValueError("an h2e import takes exactly one OUT_ROOT directory")
        return h2e_import(out_root=paths[0], skip_invalid=skip_invalid, progress=progress)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"not a file: {', '.join(missing)}")
    return bench_import(
        paths=paths, split=params.get("split", "bench"), skip_invalid=skip_invalid, progress=progress
    )


def _finish(job: Job, status: str, *, error: str) -> None:
    Job.objects.filter(pk=job.pk).update(
        status=status,
        error=error,
        parameters=job.parameters,
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )
