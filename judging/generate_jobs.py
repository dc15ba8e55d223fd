"""Generate jobs: a generator writes L2 for procedures (h2e_site.jobs runs them; this says what to send
and how to store an answer).

- The item set is fixed when the job is created (parameters["items"]: procedure pks without a good L2 yet).
- Requests are built a chunk of rows at a time as the backend asks for them, with the prompt text stored on
  the Generator (the one its generator_id hashes), and each answer is upserted as the Generation of
  (generator, procedure) with its steps and metrics, or its error (results.py).
- Failed items are recorded as every answering job records them (h2e_site.jobs.answering: the job's
  parameters["failed_items"]), and kept as the Generation's error beside them; a retry asks those whose
  L2 still failed.
- Resumable: "done" is read off the rows (a good L2 counts, a failed item or an error written since the
  job first started counts as failed), so a resumed job sends only what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef, QuerySet

from h2e_site.bounds import Range
from h2e_site.jobs.answer_kinds import ConfiguredWork
from h2e_site.jobs.models import Job
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult
from mining.models import Procedure

from .configs import GENERATION
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
    config = GENERATION.checked_config(generator)  # an imported generator, or a changed prompt, fails now
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
    parameters = {"split": split, "procedure_ids": procedure_ids, "limit": limit}
    return GENERATION.job_create(
        generator, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
    )


class GenerateWork(ConfiguredWork[Generator, str]):
    """A generator's job (self.row), its prompt template (self.prompts)."""

    answers = GENERATION
    answered_verb = "run again"

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job, backend)
        self.in_flight: dict[int, tuple[Procedure, str]] = {}  # procedure pk -> (procedure, prompt)

    def _generations(self, pks: Sequence[int]) -> QuerySet[Generation]:
        return Generation.objects.filter(generator=self.row, procedure_id__in=list(pks))

    def answered(self, pks: Sequence[int]) -> set[int]:
        """A good L2."""
        return set(self._generations(pks).filter(error="").values_list("procedure_id", flat=True))

    def failed_before(self) -> set[int]:
        if self.job.started_at is None:
            return self.failed_items
        written = self._generations(self.items).exclude(error="").filter(updated_at__gte=self.job.started_at)
        return self.failed_items | set(written.values_list("procedure_id", flat=True))

    def still_failed(self) -> set[int]:
        return set(self._generations(self.items).exclude(error="").values_list("procedure_id", flat=True))

    def rows(self, pks: Sequence[int]) -> dict[int, Procedure]:
        return Procedure.objects.in_bulk(list(pks))

    def request(self, pk: int, row: Procedure) -> LLMRequest:
        n = len(row.steps)
        prompt = generation_prompt(self.prompts, goal=row.goal, resources=row.resources, n=n)
        self.in_flight[pk] = (row, prompt)
        return generation_request(self.config, key=str(pk), prompt=prompt, n_steps=n)

    def save(self, results: Sequence[LLMResult]) -> None:
        rows = [(*self.in_flight.pop(int(result.key)), result) for result in results]
        generations_store(generator=self.row, results=rows)

    def again(self, pks: list[int], created_by: User | None) -> Job:
        return generate_job_create(
            generator=self.row,
            split=None,
            procedure_ids=pks,
            created_by=created_by,
            retry_of=self.job.pk,
        )


generate_job_retry = GenerateWork.retry  # a new job over the procedures whose L2 failed (JobType.retry)
generate_job_run = GenerateWork.run_job  # run (or resume) a generate job
