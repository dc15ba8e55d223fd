"""Judge jobs: a judge gives its How2Score verdict on generations (h2e_site.jobs runs them; this says what to
send and how to store an answer).

- mode missing: generations without a judgment by this judge; parse_failed: those whose judgment is a parse
  failure, or that the judge could not judge (a JudgeError); replace: all of them, each old judgment replaced
  when its new one is written. Generations that failed (no L2) are never judged. The item set is fixed when
  the job is created.
- Requests carry the judge prompt stored on the Judge (the one its judge_id hashes); each answer is parsed
  and upserted with its critical failures (results.py). An API or connection error is a failed item of the
  job (a JudgeError, retryable), never a judgment: it leaves any judgment already stored as it was.
- Failed items are recorded as every answering job records them (h2e_site.jobs.answering: the job's
  parameters["failed_items"], shown and retried on the Jobs page), and kept as JudgeError rows beside them
  (the judge's record: the failures page and the judge's figures read it); a retry asks those whose
  JudgeError still stands.
- Resumable: for mode missing any judgment counts as done, for parse_failed / replace a judgment written
  since the job first started; a failed item of this job (or one with a JudgeError of it) counts as failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from django.db.models import Q

from h2e_site.jobs.answer_kinds import ConfiguredWork
from h2e_site.jobs.models import Job
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult

from .configs import JUDGING
from .models import Generation, Generator, Judge, JudgeError, Judgment
from .prompting import clean_steps, judge_prompt, judge_request
from .results import judgments_store

if TYPE_CHECKING:
    from django.contrib.auth.models import User

JudgeMode = Literal["missing", "parse_failed", "replace"]
JUDGE_MODES: tuple[str, ...] = ("missing", "parse_failed", "replace")


def judge_job_create(
    *,
    judge: Judge,
    generator: Generator | None = None,
    generation_ids: list[int] | None = None,
    mode: JudgeMode = "missing",
    created_by: User | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job judging generations (of `generator` and/or `generation_ids`) with `judge` (see the module doc
    for the modes). Enqueued once the surrounding transaction commits (enqueue=False: not at all)."""
    if mode not in JUDGE_MODES:
        raise ValueError(f"unknown judge mode {mode!r}: expected missing, parse_failed or replace")
    if generator is None and generation_ids is None:
        raise ValueError("judge what? give a generator or generation_ids")
    config = JUDGING.checked_config(judge)  # an imported judge, or a changed prompt file, fails now
    generations = Generation.objects.filter(error="")
    if generator is not None:
        generations = generations.filter(generator=generator)
    if generation_ids is not None:
        generations = generations.filter(pk__in=generation_ids)
    if mode == "missing":
        generations = generations.exclude(judgments__judge=judge)
    elif mode == "parse_failed":
        generations = generations.filter(
            Q(judgments__judge=judge, judgments__parse_failed=True) | Q(judge_errors__judge=judge)
        ).distinct()
    items = list(generations.order_by("pk").values_list("pk", flat=True))
    parameters = {
        "generator": generator.pk if generator else None,
        "generator_id": generator.generator_id if generator else None,
        "generation_ids": generation_ids,
        "mode": mode,
    }
    return JUDGING.job_create(
        judge, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
    )


class JudgeWork(ConfiguredWork[Judge, str]):
    """A judge's job (self.row), its judge prompt (self.prompts)."""

    answers = JUDGING
    answered_verb = "judged again"

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job, backend)
        self.mode: JudgeMode = job.parameters.get("mode", "missing")
        self.in_flight: dict[int, Generation] = {}

    def answered(self, pks: Sequence[int]) -> set[int]:
        """Judged: for mode missing any judgment, else one written since the job first started."""
        judged = Judgment.objects.filter(judge=self.row, generation_id__in=list(pks))
        if self.mode != "missing":
            started = self.job.started_at
            judged = judged.filter(updated_at__gte=started) if started else judged.none()
        return set(judged.values_list("generation_id", flat=True))

    def failed_before(self) -> set[int]:
        errors = JudgeError.objects.filter(job=self.job, generation_id__in=self.items)
        return self.failed_items | set(errors.values_list("generation_id", flat=True))

    def still_failed(self) -> set[int]:
        errors = JudgeError.objects.filter(judge=self.row, generation_id__in=self.items)
        return set(errors.values_list("generation_id", flat=True))

    def rows(self, pks: Sequence[int]) -> dict[int, Generation]:
        return Generation.objects.select_related("procedure").in_bulk(list(pks))

    def request(self, pk: int, row: Generation) -> LLMRequest:
        l1, l2 = clean_steps(row.procedure.steps), clean_steps(row.predicted_steps)
        prompt = judge_prompt(self.prompts, goal=row.procedure.goal, reference_steps=l1, steps=l2)
        self.in_flight[pk] = row
        return judge_request(self.config, key=str(pk), prompt=prompt, n_l1=len(l1), n_l2=len(l2))

    def save(self, results: Sequence[LLMResult]) -> None:
        rows = [(self.in_flight.pop(int(result.key)), result) for result in results]
        judgments_store(judge=self.row, results=rows, job_pk=self.job.pk)

    def again(self, pks: list[int], created_by: User | None) -> Job:
        return judge_job_create(
            judge=self.row,
            generation_ids=pks,
            mode="parse_failed",
            created_by=created_by,
            retry_of=self.job.pk,
        )


judge_job_retry = JudgeWork.retry  # a new job over the items the judge could not judge (JobType.retry)
judge_job_run = JudgeWork.run_job  # run (or resume) a judge job
