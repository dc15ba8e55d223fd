"""Pairwise judge jobs: the LLM twin of a pairwise study. A judge is shown two L2s of one goal and says which
has fewer critical failures; it is asked in both orders, so that a verdict that flips with the order shows.

- Pairs: two generations (L2s) of the same procedure, by pk (ints, or strings of digits), in either order,
  stored as (a, b) with a < b.
  Refused (BadInput naming the pair): a generation paired with itself, one that does not exist, one that
  failed (no L2), two of different procedures.
- Items: each pair asked in each order, "ab" (A shown first, as Procedure 1) and "ba"; item 2k is pair k of
  parameters["pairs"] in order "ab", item 2k + 1 the same pair in order "ba". The job holds the (pair, order)s
  that have no verdict by the judge under the current prompt; fixed when the job is created. NothingToAsk when
  none is left.
- An answer is stored as the PairwiseJudgment of (judge, a, b, order), upserted: its verdict as shown, or a
  parse failure (verdict empty, the raw output and the reason kept). A parse failure and an API or connection
  error are both failed items of the job, recorded the one h2e_site.jobs.answering way (the job's
  parameters["failed_items"], shown with the first errors on the Jobs page); "Retry failed items" asks those
  still without a verdict. An API error writes no row.
- Resumable: a (pair, order) with a verdict under the job's prompt is done, a failed item of this job failed;
  the rest is sent. Each row keeps its attempts, tokens and seconds waiting; the job keeps their sum (usage).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from h2e_site.inputs import BadInput
from h2e_site.jobs import answering
from h2e_site.jobs.loop import job_run
from h2e_site.jobs.models import Job
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult

from .configs import config_for_judge
from .job_kinds import PAIRWISE_JUDGE
from .models import Generation, Judge, PairwiseJudgment, PairwiseOrder
from .pairwise_prompt import (
    pairwise_prompt,
    pairwise_request,
    pairwise_template,
    pairwise_template_sha256,
    parse_pairwise_verdict,
)
from .prompting import clean_steps

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ORDERS: tuple[str, str] = (PairwiseOrder.AB.value, PairwiseOrder.BA.value)
Pair = tuple[int, int]
_MAX_PK = 2**63 - 1


@dataclass(frozen=True)
class Asked:
    """One item of a job: a pair (a < b) in one order."""

    a: int
    b: int
    order: str

    @property
    def key(self) -> tuple[int, int, str]:
        return self.a, self.b, self.order


def pairs_check(pairs: Iterable[Sequence[int | str]]) -> list[Pair]:
    """The pairs as (a, b) with a < b, sorted, repeats dropped; BadInput naming the first pair refused."""
    unique = sorted({_pair(pair) for pair in pairs})
    if not unique:
        raise BadInput("pairs", "[]", "a list of at least one pair")
    generations = Generation.objects.in_bulk({pk for pair in unique for pk in pair})
    for a, b in unique:
        missing = [pk for pk in (a, b) if pk not in generations]
        if missing:
            raise BadInput("pairs", (a, b), f"a pair of generations that exist (no generation {missing[0]})")
        failed = [pk for pk in (a, b) if generations[pk].error]
        if failed:
            raise BadInput("pairs", (a, b), f"a pair of L2s (generation {failed[0]} failed: it has no L2)")
        first, second = generations[a], generations[b]
        if first.procedure_id != second.procedure_id:
            raise BadInput(
                "pairs",
                (a, b),
                f"two L2s of the same goal (generation {a} is of procedure {first.procedure_id}, generation "
                f"{b} of procedure {second.procedure_id})",
            )
    return unique


def _pair(pair: Sequence[int | str]) -> Pair:
    ids = [] if isinstance(pair, str | bytes) else [_pk(value) for value in pair]
    a, b = ids if len(ids) == 2 else (None, None)
    if a is None or b is None:
        raise BadInput("pairs", pair, "a pair of two generation ids (positive whole numbers)")
    if a == b:
        raise BadInput("pairs", (a, b), "a pair of two different generations (one is paired with itself)")
    return min(a, b), max(a, b)


def _pk(value: object) -> int | None:
    """A generation id as given: an int, or a string of ASCII digits; None for anything else."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_PK:
        return None
    return value


def judged(judge: Judge, asked: Iterable[Asked], prompt_sha256: str) -> set[Asked]:
    """Those of `asked` with a verdict by `judge` under the prompt hashed `prompt_sha256`."""
    wanted = {item.key: item for item in asked}
    if not wanted:
        return set()
    rows = (
        PairwiseJudgment.objects.filter(
            judge=judge,
            prompt_sha256=prompt_sha256,
            generation_a_id__in={a for a, _, _ in wanted},
            generation_b_id__in={b for _, b, _ in wanted},
        )
        .exclude(verdict="")
        .values_list("generation_a_id", "generation_b_id", "order")
    )
    return {wanted[row] for row in rows if row in wanted}


def pairwise_judge_job_create(
    pairs: Iterable[Sequence[int | str]],
    *,
    judge: Judge,
    created_by: User | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job asking `judge` about each pair of generations in both orders, those (pair, order)s without a
    verdict under the current prompt (module doc). Enqueued once the surrounding transaction commits
    (enqueue=False: not at all). BadInput for a refused pair; ConfigError for an imported judge without a
    config; NothingToAsk when every (pair, order) has a verdict."""
    checked = pairs_check(pairs)
    config = config_for_judge(judge)  # fails now, not on the worker, for an imported judge
    sha = pairwise_template_sha256()
    asked = [Asked(a, b, order) for a, b in checked for order in ORDERS]
    done = judged(judge, asked, sha)
    pending = [item for item in asked if item not in done]
    if not pending:
        raise answering.NothingToAsk(
            f"{judge.model} ({judge.judge_id}) has a verdict in both orders on every pair asked "
            f"({len(checked)}): nothing to judge"
        )
    kept = sorted({(item.a, item.b) for item in pending})
    index = {pair: k for k, pair in enumerate(kept)}
    items = sorted(2 * index[item.a, item.b] + ORDERS.index(item.order) for item in pending)
    parameters = {
        "judge": judge.pk,
        "judge_id": judge.judge_id,
        "pairs": [list(pair) for pair in kept],
        "prompt_sha256": sha,
    }
    return answering.answering_job_create(
        PAIRWISE_JUDGE, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
    )


def pairwise_judge_job_retry(job: Job, created_by: User | None) -> Job:
    """A new job over the (pair, order)s of `job` that failed and still have no verdict."""
    return PairwiseJudgeWork.retry(job, created_by)


def pairwise_judge_job_run(*, job_id: int, backend: LLMBackend | None = None) -> Job | None:
    """Run (or resume) a pairwise judge job. `backend` is for callers that bring their own."""
    return job_run(job_id, PAIRWISE_JUDGE, lambda job: PairwiseJudgeWork(job, backend))


class PairwiseJudgeWork(answering.AnsweringWork):
    """Two requests per pair, one per order (see the module doc)."""

    answered_verb = "judged"

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job, backend)
        self.judge = Judge.objects.get(pk=job.parameters["judge"])
        self.config = config_for_judge(self.judge)
        self.sha = job.parameters["prompt_sha256"]
        self.pairs: list[Pair] = [(a, b) for a, b in job.parameters["pairs"]]
        self.unreadable: dict[int, str] = {}  # item -> why its answer could not be read (until counted)
        self.template = ""

    def started(self) -> None:
        """The prompt is read once the job runs (a retry needs none): the job fails with PromptChanged when
        the file no longer says what it said when the job was made."""
        self.template = pairwise_template(self.sha, label=f"pairwise judge job {self.job.pk}")

    def asked(self, pk: int) -> Asked:
        a, b = self.pairs[pk // 2]
        return Asked(a, b, ORDERS[pk % 2])

    def answered(self, pks: Sequence[int]) -> set[int]:
        by_asked = {self.asked(pk): pk for pk in pks}
        return {by_asked[item] for item in judged(self.judge, by_asked, self.sha)}

    def rows(self, pks: Sequence[int]) -> dict[int, tuple[Generation, Generation]]:
        """Both generations of each item's pair (an item whose pair lost one is left out: see present())."""
        asked = {pk: self.asked(pk) for pk in pks}
        generations = Generation.objects.select_related("procedure").in_bulk(
            {pk for item in asked.values() for pk in (item.a, item.b)}
        )
        return {
            pk: (generations[item.a], generations[item.b])
            for pk, item in asked.items()
            if item.a in generations and item.b in generations
        }

    def request(self, pk: int, row: tuple[Generation, Generation]) -> LLMRequest:
        a, b = row
        first, second = (a, b) if self.asked(pk).order == PairwiseOrder.AB else (b, a)
        prompt = pairwise_prompt(
            self.template,
            goal=a.procedure.goal,
            reference_steps=clean_steps(a.procedure.steps),
            first=clean_steps(first.predicted_steps),
            second=clean_steps(second.predicted_steps),
        )
        return pairwise_request(self.config, key=str(pk), prompt=prompt)

    def save(self, results: Sequence[LLMResult]) -> None:
        rows = [self._row(int(result.key), result) for result in results if result.ok]
        PairwiseJudgment.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["judge", "generation_a", "generation_b", "order"],
            update_fields=[
                "verdict",
                "raw_output",
                "parse_problem",
                "prompt_sha256",
                "job",
                "attempts",
                "prompt_tokens",
                "completion_tokens",
                "latency_s",
                "updated_at",
            ],
        )
        self.failed_items.update(self.unreadable)

    def _row(self, pk: int, result: LLMResult) -> PairwiseJudgment:
        parsed = parse_pairwise_verdict(result.text)
        if parsed.parse_failed:
            self.unreadable[pk] = parsed.problem
        item = self.asked(pk)
        return PairwiseJudgment(
            judge=self.judge,
            generation_a_id=item.a,
            generation_b_id=item.b,
            order=item.order,
            verdict=parsed.verdict,
            raw_output=result.text or "",
            parse_problem=parsed.problem,
            prompt_sha256=self.sha,
            job_id=self.job.pk,
            attempts=result.attempts,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            latency_s=result.latency_s,
        )

    def count(self, results: Sequence[LLMResult]) -> None:
        """As every job counts, except that an answer that could not be read is a failed item (its cost
        counted all the same)."""
        super().count([result for result in results if int(result.key) not in self.unreadable])
        for result in results:
            problem = self.unreadable.pop(int(result.key), None)
            if problem is not None:
                self.progress.failed += 1
                self.usage.add(result)
                item = self.asked(int(result.key))
                self.keep_error(f"item {result.key} (pair {item.a}, {item.b}, {item.order}): {problem}")

    def again(self, pks: list[int], created_by: User | None) -> Job:
        pairs = sorted({(self.asked(pk).a, self.asked(pk).b) for pk in pks})
        return pairwise_judge_job_create(pairs, judge=self.judge, created_by=created_by, retry_of=self.job.pk)
