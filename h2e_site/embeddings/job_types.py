"""The embeddings app's kind of job as the core runs and shows it; registered from
EmbeddingsConfig.ready(), by name: its task, and the function that starts a job from the API (job_api.py),
are imported when a job is sent or started, not here."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import ByPath, JobDescription, JobLink, JobType, TaskName, job_type_register

from .job_kinds import EMBED
from .sources import text_source_for
from .specs import DEFAULT_EMBEDDING_MODEL


def describe_embed_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The model and the sources an embed job covers, and the store's page."""
    store = reverse("admin:embeddings_embeddingmodel_changelist")
    descriptions = {}
    for job in jobs:
        labels = []
        for name in job.parameters.get("sources", []):
            try:
                labels.append(text_source_for(name).label)
            except LookupError:
                labels.append(f"{name} (no longer registered)")
        descriptions[job.pk] = JobDescription(
            links=(JobLink("The stored embeddings", store, "Store"),),
            facts=(("model", job.parameters.get("model", "")), ("texts of", ", ".join(labels) or "none")),
        )
    return descriptions


def _note(job: Job) -> str:
    return f"{job.parameters.get('model', '')}: {', '.join(job.parameters.get('sources', []))}"


def embed_command(job: Job) -> str:
    """The `embed` command that embeds what this job would have, in this process (no worker needed)."""
    sources = " ".join(f"--source {name}" for name in job.parameters.get("sources", []))
    model = job.parameters.get("model", "")
    model_flag = f" --model {model}" if model and model != DEFAULT_EMBEDDING_MODEL else ""
    return f"Run it with: python manage.py embed {sources}{model_flag} --inline".replace("  ", " ")


def register_job_types() -> None:
    job_type_register(
        JobType(
            EMBED,
            TaskName("embeddings.run_embed_job"),
            label="Embed texts",
            note=_note,
            describe=describe_embed_jobs,
            create_serializer="h2e_site.embeddings.serializers.EmbedJobCreateSerializer",
            api_create=ByPath("h2e_site.embeddings.job_api.embed_api_create"),
            start_hint="Embed texts without a vector: the admin's Embedding models, POST /api/jobs/, or "
            "manage.py embed; it also runs by itself after a bench import, an h2e import, a mining run, a "
            "judge job and an annotation that stores failures.",
            run_hint=embed_command,
        )
    )
