"""Generate jobs: a generator writes L2 for procedures (h2e_site.jobs runs them; this says what to send
and how to store an answer).

- The item set is fixed when the job is created (parameters["items"]: procedure pks without a good L2 yet).
- Requests are built a chunk of rows at a time as the backend asks for them, with the prompt text stored on
  the Generator (the one its generator_id hashes), and each answer is upserted as the Generation of
  (generator, procedure) with its steps and metrics, or its error (results.py).
- Resumable: "done" is read off the rows (a good L2 counts, an error written since the job first started
  counts as failed), so a resumed job sends only what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef

from h2e_site.bounds import Range
from h2e_site.jobs.loop import ItemWork, Progress, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import NothingToRetry, job_create
from h2e_site.llm.base import BackendConfig, LLMBackend, LLMRequest, LLMResult
from mining.models import Procedure

from .configs import config_for_generator, prompt_for_generator
from .job_kinds import GENERATE
from .models import Generation, Generator
from .prompting import generation_prompt, generation_request
from .results import generations_store

LIMIT = Range(1, 10_000_000)  # procedures a generate job may take ("at most this many")

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def generate_job_create(
    *,
    generator: Generator,
    split: str | None = "bench",
    procedure_ids: list[int] | None = None,
    limit: int | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job generating L2 with `generator` for the procedures of `split` (and/or `procedure_ids`), first
    `limit` by id, that have no good L2 from it yet. Enqueued once the surrounding transaction commits
    (enqueue=False: not at all, for a caller that runs it in-process with generate_job_run)."""
    config = config_for_generator(generator)  # fails now, not on the worker, for an imported generator
    prompt_for_generator(generator)  # ... and for a prompt file changed since the generator was made
    if limit is not None:
        LIMIT.check("limit", limit)  # OutOfRange is a ValueError naming the field
    procedures = Procedure.objects.all()
    if split:
        procedures = procedures.filter(split=split)
    if procedure_ids is not None:
        procedures = procedures.filter(pk__in=procedure_ids)
    good_l2 = Generation.objects.filter(generator=generator, procedure=OuterRef("pk"), error="")
    pks = procedures.exclude(Exists(good_l2)).order_by("pk").values_list("pk", flat=True)
    items = list(pks[:limit] if limit else pks)
    parameters = {
        "generator": generator.pk,
        "generator_id": generator.generator_id,
        "split": split,
        "procedure_ids": procedure_ids,
        "limit": limit,
        "backend": config.backend,
        "items": items,
        **({"retry_of": retry_of} if retry_of else {}),
    }
    return job_create(
        kind=GENERATE, parameters=parameters, total=len(items), created_by=created_by, enqueue=enqueue
    )


def generate_job_retry(job: Job, created_by: User | None) -> Job:
    """A new generate job over the procedures of `job` whose L2 failed (API errors after retries)."""
    generator = Generator.objects.get(pk=job.parameters["generator"])
    failed = list(
        Generation.objects.filter(generator=generator, procedure_id__in=job.parameters.get("items", []))
        .exclude(error="")
        .values_list("procedure_id", flat=True)
    )
    if not failed:
        raise NothingToRetry(f"job {job.pk} has no failed items left to retry (they were run again since)")
    return generate_job_create(
        generator=generator, split=None, procedure_ids=failed, created_by=created_by, retry_of=job.pk
    )


def generate_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a generate job. `backend` is for callers that bring their own (benchmarks)."""
    return job_run(job_id, GENERATE, lambda job: GenerateWork(job, backend))


class GenerateWork(ItemWork):
    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job)
        self.backend = backend
        self.generator = Generator.objects.get(pk=job.parameters["generator"])
        self.config = config_for_generator(self.generator)
        self.template = prompt_for_generator(self.generator)
        self.in_flight: dict[int, tuple[Procedure, str]] = {}  # procedure pk -> (procedure, prompt)

    def backend_config(self) -> BackendConfig:
        return self.config.backend_config()

    def pending_and_counts(self) -> tuple[list[int], Progress]:
        rows = dict(
            Generation.objects.filter(generator=self.generator, procedure_id__in=self.items).values_list(
                "procedure_id", "error"
            )
        )
        written_since = set(
            Generation.objects.filter(
                generator=self.generator,
                procedure_id__in=self.items,
                updated_at__gte=self.job.started_at,
            ).values_list("procedure_id", flat=True)
        )
        progress = Progress()
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
