"""Judge jobs: a judge gives its How2Score verdict on generations (h2e_site.jobs runs them; this says what to
send and how to store an answer).

- mode missing: generations without a judgment by this judge; parse_failed: those whose judgment is a parse
  failure, or that the judge could not judge (a JudgeError); replace: all of them, each old judgment replaced
  when its new one is written. Generations that failed (no L2) are never judged. The item set is fixed when
  the job is created.
- Requests carry the judge prompt stored on the Judge (the one its judge_id hashes); each answer is parsed
  and upserted with its critical failures (results.py). An API or connection error is a failed item of the
  job (a JudgeError, retryable), never a judgment: it leaves any judgment already stored as it was.
- Resumable: for mode missing any judgment counts as done, for parse_failed / replace a judgment written
  since the job first started; an item with a JudgeError of this job counts as failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from django.db.models import Q

from h2e_site.jobs.loop import ItemWork, Progress, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import NothingToRetry, job_create
from h2e_site.llm.base import BackendConfig, LLMBackend, LLMRequest, LLMResult

from .configs import config_for_judge, prompt_for_judge
from .job_kinds import JUDGE
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
    config = config_for_judge(judge)  # fails now, not on the worker, for an imported judge
    prompt_for_judge(judge)  # ... and for a prompt file changed since the judge was made
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
        "judge": judge.pk,
        "judge_id": judge.judge_id,
        "generator": generator.pk if generator else None,
        "generator_id": generator.generator_id if generator else None,
        "generation_ids": generation_ids,
        "mode": mode,
        "backend": config.backend,
        "items": items,
        **({"retry_of": retry_of} if retry_of else {}),
    }
    return job_create(
        kind=JUDGE, parameters=parameters, total=len(items), created_by=created_by, enqueue=enqueue
    )


def judge_job_retry(job: Job, created_by: User | None) -> Job:
    """A new judge job over the items of `job` the judge could not judge (its JudgeErrors still standing)."""
    judge = Judge.objects.get(pk=job.parameters["judge"])
    failed = list(
        JudgeError.objects.filter(judge=judge, generation_id__in=job.parameters.get("items", []))
        .order_by("generation_id")
        .values_list("generation_id", flat=True)
    )
    if not failed:
        raise NothingToRetry(f"job {job.pk} has no failed items left to retry (they were judged again since)")
    return judge_job_create(
        judge=judge, generation_ids=failed, mode="parse_failed", created_by=created_by, retry_of=job.pk
    )


def judge_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a judge job. `backend` is for callers that bring their own (benchmarks)."""
    return job_run(job_id, JUDGE, lambda job: JudgeWork(job, backend))


class JudgeWork(ItemWork):
    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job)
        self.backend = backend
        self.judge = Judge.objects.get(pk=job.parameters["judge"])
        self.mode: JudgeMode = job.parameters.get("mode", "missing")
        self.config = config_for_judge(self.judge)
        self.template = prompt_for_judge(self.judge)
        self.in_flight: dict[int, Generation] = {}

    def backend_config(self) -> BackendConfig:
        return self.config.backend_config()

    def pending_and_counts(self) -> tuple[list[int], Progress]:
        judged = dict(
            Judgment.objects.filter(judge=self.judge, generation_id__in=self.items).values_list(
                "generation_id", "updated_at"
            )
        )
        failed = set(
            JudgeError.objects.filter(job=self.job, generation_id__in=self.items).values_list(
                "generation_id", flat=True
            )
        )
        started = self.job.started_at
        progress = Progress()
        pending = []
        for pk in self.items:
            written_since = pk in judged and started is not None and judged[pk] >= started
            if pk in judged and (written_since or self.mode == "missing"):
                progress.done += 1
            elif pk in failed:
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
        judgments_store(judge=self.judge, results=rows, job_pk=self.job.pk)
