"""Running an `embed` job (jobs.py queues it and says what it guarantees): the texts of its sources without a
vector are embedded a batch at a time, each batch stored in one transaction and counted in the job's
progress (total: the texts still to embed when the run started)."""

from __future__ import annotations

from collections.abc import Callable

from h2e_site.jobs.loop import JobWork, Progress
from h2e_site.jobs.models import Job

from .sources import text_source_for
from .specs import DEFAULT_EMBEDDING_MODEL, Embedder
from .store import StoredEmbed


class EmbedStopped(Exception):
    """The job was cancelled between two batches."""


class EmbedWork(JobWork):
    def __init__(
        self, job: Job, *, encoder: Embedder | None = None, on_progress: Callable[[Job], None] | None = None
    ) -> None:
        super().__init__(job, on_progress)
        self.embed = StoredEmbed(
            job.parameters.get("model", DEFAULT_EMBEDDING_MODEL),
            encoder=encoder,
            on_batch=self._embedded,
            device="cuda" if job.parameters.get("device") == "gpu" else "cpu",
        )

    def run(self) -> None:
        texts = (
            text for name in self.job.parameters.get("sources", []) for text in text_source_for(name).texts()
        )
        missing = self.embed.missing(texts)
        self.job.total = len(missing)
        Job.objects.filter(pk=self.job.pk).update(total=self.job.total)
        self.progress = Progress()
        self.write_progress(force=True)
        try:
            self.embed.fill(missing)
        except EmbedStopped:
            return

    def _embedded(self, n: int) -> None:
        self.progress.done += n
        self.write_progress()
        if self.should_stop():
            raise EmbedStopped
