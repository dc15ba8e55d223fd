"""Writing LLM results: a generator's L2 (Generation) and a judge's verdict (Judgment + CriticalFailure).

Both writers take a group of results and write them in one transaction (an upsert on the unique constraint),
so a run can commit results as they arrive without paying a transaction per row. Writing the same result
again changes nothing but `updated_at`: the writes are idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from h2e_site.embeddings.jobs import embed_after
from h2e_site.llm.base import LLMResult
from mining.models import Procedure

from .embedding import JUDGE_FAILURES
from .metrics import compute_generation_metrics
from .models import CriticalFailure, Generation, Generator, Judge, JudgeError, Judgment
from .parsing import ParsedFailure, extract_steps, parse_judge_output
from .prompting import clean_steps

GENERATION_FIELDS = (
    "prompt",
    "model_completion",
    "attempts",
    "error",
    "predicted_steps",
    "n_tokens",
    "step_count_mismatch",
    "duplicate_step_rate",
    "duplicate_ngram_rate",
)
JUDGMENT_FIELDS = (
    "generator",
    "topic",
    "reasoning",
    "raw_output",
    "parse_failed",
    "has_failure",
    "n_failures",
    "previous_has_failure",
    "attempts",
    "extra",
)


def generations_store(
    *, generator: Generator, results: Sequence[tuple[Procedure, str, LLMResult]]
) -> list[Generation]:
    """Upsert the generator's L2 for each (procedure, prompt, result): raw completion, steps and metrics,
    or the error (then no steps)."""
    rows = [_generation_row(generator, procedure, prompt, result) for procedure, prompt, result in results]
    with transaction.atomic():
        Generation.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["generator", "procedure"],
            update_fields=[*GENERATION_FIELDS, "updated_at"],
        )
    return rows


def _generation_row(generator: Generator, procedure: Procedure, prompt: str, result: LLMResult) -> Generation:
    row = Generation(
        generator=generator,
        procedure=procedure,
        prompt=prompt,
        model_completion=result.text or "",
        attempts=result.attempts,
        error="" if result.ok else (result.error or "no completion"),
    )
    if result.ok:
        row.predicted_steps = extract_steps(result.text)
        metrics = compute_generation_metrics(row.predicted_steps, procedure.steps)
        for name, value in metrics.as_fields().items():
            setattr(row, name, value)
    return row


def judgments_store(
    *, judge: Judge, results: Sequence[tuple[Generation, LLMResult]], job_pk: int | None = None
) -> list[Judgment]:
    """Store the judge's answer on each (generation, result), in one transaction: an answer is parsed and
    upserted as the generation's judgment with its critical failures (and clears an earlier JudgeError); an
    API or connection error is upserted as a JudgeError of job `job_pk`, never as a judgment, so a good
    judgment already stored stays and no score counts the error. Returns the judgments written."""
    answered = [(generation, result) for generation, result in results if result.ok]
    failed = [(generation, result) for generation, result in results if not result.ok]
    parsed = [_judgment_row(judge, generation, result) for generation, result in answered]
    with transaction.atomic():
        _errors_store(judge, failed, job_pk)
        if not parsed:
            return []
        rows = [row for row, _ in parsed]
        _previous_verdicts(judge, rows)
        Judgment.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["judge", "generation"],
            update_fields=[*JUDGMENT_FIELDS, "updated_at"],
        )
        JudgeError.objects.filter(judge=judge, generation_id__in=[row.generation_id for row in rows]).delete()
        CriticalFailure.objects.filter(judgment_id__in=[row.pk for row in rows]).delete()
        CriticalFailure.objects.bulk_create(
            CriticalFailure(
                judgment_id=row.pk,
                order=order,
                description=failure.description,
                l1_steps=failure.l1_steps,
                l2_steps=failure.l2_steps,
                steps_out_of_range=failure.steps_out_of_range,
            )
            for row, failures in parsed
            for order, failure in enumerate(failures)
        )
        if any(failures for _, failures in parsed):
            embed_after(JUDGE_FAILURES)  # their vectors, for similar failures and failure patterns
    return rows


def _previous_verdicts(judge: Judge, rows: list[Judgment]) -> None:
    """Set each row's previous_has_failure from the judgment it is about to replace (locked until commit)."""
    previous = {
        generation_id: (has_failure, parse_failed)
        for generation_id, has_failure, parse_failed in Judgment.objects.select_for_update()
        .filter(judge=judge, generation_id__in=[row.generation_id for row in rows])
        .values_list("generation_id", "has_failure", "parse_failed")
    }
    for row in rows:
        old = previous.get(row.generation_id)
        replaced_a_verdict = old is not None and not old[1] and not row.parse_failed
        row.previous_has_failure = old[0] if old is not None and replaced_a_verdict else None


def _errors_store(judge: Judge, failed: Sequence[tuple[Generation, LLMResult]], job_pk: int | None) -> None:
    if not failed:
        return
    JudgeError.objects.bulk_create(
        [
            JudgeError(
                judge=judge,
                generation=generation,
                job_id=job_pk,
                error=result.error or "no completion",
                attempts=result.attempts,
            )
            for generation, result in failed
        ],
        update_conflicts=True,
        unique_fields=["judge", "generation"],
        update_fields=["job", "error", "attempts", "updated_at"],
    )


def _judgment_row(
    judge: Judge, generation: Generation, result: LLMResult
) -> tuple[Judgment, list[ParsedFailure]]:
    procedure = generation.procedure
    row = Judgment(
        judge=judge,
        generation=generation,
        generator_id=generation.generator_id,
        procedure_id=procedure.pk,
        topic_id=procedure.topic_id,
        raw_output=result.text or "",
        attempts=result.attempts,
    )
    l1, l2 = clean_steps(procedure.steps), clean_steps(generation.predicted_steps)
    parsed = parse_judge_output(result.text, n_l1=len(l1), n_l2=len(l2))
    row.reasoning = parsed.reasoning
    row.parse_failed = parsed.parse_failed
    row.has_failure = parsed.has_failure
    row.n_failures = parsed.n_failures
    extra: dict[str, Any] = {"parse_problem": parsed.problem} if parsed.problem else {}
    row.extra = extra
    return row, parsed.failures
