"""The `embed` job: every text of some sources without a vector under a model is embedded and stored.

embed_job_create() checks the sources and the model's name and queues the job; the Celery task (tasks.py)
calls embed_job_run(), which runs EmbedWork (work.py, numpy; imported when a job runs) in the core's loop
(h2e_site.jobs.loop.job_run: lock, status, cancel check). Idempotent and resumable: the work asks the store
which texts still lack a vector each time it starts, stores each batch as it is embedded (one transaction a
batch), and a text stored twice is stored once; so a job redelivered after its worker died embeds only what
the dead one had not stored, and a second job over the same texts embeds nothing.

Started by the `embed` command, the admin (Embedding models: "Embed the texts without a vector"), the API
(POST /api/jobs/ {"kind": "embed"}), and by itself after a bench import, an h2e import, a mining run, a batch
of a judge job that stored failures and an annotation that stored failures (embed_after()).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction

from h2e_site.jobs.loop import job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import GPU_QUEUE, job_create

from .job_kinds import EMBED
from .sources import text_source_for, text_sources
from .specs import DEFAULT_EMBEDDING_MODEL

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from .specs import Embedder

MODEL_KEY_MAX_LENGTH = 200
CPU, GPU = "cpu", "gpu"
DEVICES = (CPU, GPU)


def embed_job_create(
    *,
    sources: Sequence[str] | None = None,
    model: str = DEFAULT_EMBEDDING_MODEL,
    device: str = CPU,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    """A queued `embed` job over `sources` (default: every registered source), for a CPU worker or (device
    "gpu") one on the `gpu` queue, which runs the model on CUDA; LookupError naming an unknown source,
    ValueError for a model name that is empty or too long or an unknown device."""
    names = list(dict.fromkeys(sources)) if sources else [source.name for source in text_sources()]
    for name in names:
        text_source_for(name)
    if not model.strip() or len(model) > MODEL_KEY_MAX_LENGTH:
        raise ValueError(f"model: an embedding model's name is 1 to {MODEL_KEY_MAX_LENGTH} characters")
    if device not in DEVICES:
        raise ValueError(f"device: expected one of {', '.join(DEVICES)}, got {device!r}")
    parameters = {"model": model, "sources": names}
    if device == GPU:
        parameters |= {"device": GPU, "queue": GPU_QUEUE}
    return job_create(kind=EMBED, parameters=parameters, created_by=created_by, enqueue=enqueue)


def embed_after(*sources: str) -> None:
    """Queue an `embed` job of the default model over `sources` once the current transaction commits (after
    an import, a mining run, or failures stored by a judge or an annotator), unless one over the same
    sources is already queued (not started yet), or settings.EMBED_AFTER_IMPORTS (H2E_EMBED_AFTER_IMPORTS)
    is off."""
    if not settings.EMBED_AFTER_IMPORTS:
        return

    def queue() -> None:
        waiting = Job.objects.filter(kind=EMBED, status="queued", parameters__sources=list(sources))
        if not waiting.exists():
            embed_job_create(sources=list(sources))

    transaction.on_commit(queue)


def embed_job_run(
    *, job_id: int, encoder: Embedder | None = None, on_progress: Callable[[Job], None] | None = None
) -> Job | None:
    """Run (or resume) the embed job `job_id`; `encoder` stands in for the named model (tests, benchmarks)."""
    from .work import EmbedWork  # numpy and the encoders: only where a job runs

    return job_run(job_id, EMBED, lambda job: EmbedWork(job, encoder=encoder, on_progress=on_progress))
