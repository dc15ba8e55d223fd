"""Judge probe jobs: the probe made (sample, perturbations, stored verdicts read) and its job run.

- judge_probe_create: refuses what cannot run (BadInput naming the field: n, seed, kind, rewriter_config;
  ConfigError for a judge without a config), samples the generator's L2 (those without an error and with
  at least the steps the kind needs: 1 for verbose, 2 to delete or swap), makes the items with their
  perturbation (delete and swap at once; verbose after the rewriter answers) and the original's verdict when
  the judge has a stored Judgment of it, and a job whose total is the steps of work: per item, the rewrite
  (verbose only) and the judging (both verdicts).
- The job (ProbeWork) runs on the core's loop: first the rewrites (the rewriter's config, the probe's own
  prompt prompts/judge_probe_verbose.txt, refused once the file no longer hashes to what the probe recorded;
  a rewrite with another number of steps than the original's is the item's error), then the judge on each
  item's original (read from a Judgment stored since, else asked and stored as a judge job stores it, with
  a JudgeError on an API error) and on its perturbed L2 (kept on the item only). Resumable: what an item
  holds is done; cancelling stops between requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction

from h2e_site.inputs import BadInput
from h2e_site.jobs.answering import config_of_row
from h2e_site.jobs.loop import JobWork, Progress, job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create
from h2e_site.llm.base import LLMRequest, LLMResult
from h2e_site.llm.config import ModelConfig, load_config
from h2e_site.llm.prompts import PROMPTS_DIR, check_prompt, prompt_sha256, read_prompt

from ..configs import config_for_judge, prompt_for_judge
from ..job_kinds import JUDGE_PROBE
from ..metrics import count_tokens
from ..models import Generation, Generator, Judge, Judgment
from ..parsing import extract_steps, parse_judge_output
from ..prompting import clean_steps, generation_request, judge_prompt, judge_request, numbered
from ..results import judgments_store
from .models import JudgeProbe, JudgeProbeItem, ProbeKind
from .perturb import MIN_STEPS, item_rng, perturb, sample_pks

if TYPE_CHECKING:
    from django.contrib.auth.models import User

VERBOSE_PROMPT = "judge_probe_verbose.txt"
MAX_N = 2_000
MAX_SEED = 2**31 - 1


def verbose_template() -> str:
    return read_prompt(PROMPTS_DIR / VERBOSE_PROMPT)


def verbose_prompt(template: str, *, goal: str, steps: Sequence[str]) -> str:
    """The rewrite prompt filled: the goal, the number of steps and the L2 as `1. step` lines."""
    return template.format(goal=goal.strip(), n=len(steps), steps=numbered(steps))


# --- making a probe -----------------------------------------------------------------------------------------


def judge_probe_create(
    *,
    judge: Judge,
    generator: Generator,
    kind: str,
    n: int,
    seed: int,
    rewriter_config: Path | str | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> JudgeProbe:
    """A probe of `judge` on `n` L2 of `generator` and its job (module doc); BadInput naming the field."""
    if kind not in ProbeKind.values:
        raise BadInput("kind", kind, f"one of {', '.join(ProbeKind.values)}")
    if not 1 <= n <= MAX_N:
        raise BadInput("n", n, f"a sample size from 1 to {MAX_N}")
    if not 0 <= seed <= MAX_SEED:
        raise BadInput("seed", seed, f"a whole number from 0 to {MAX_SEED}")
    judge_config = config_for_judge(judge)  # ConfigError now, not on the worker, for an imported judge
    prompt_for_judge(judge)
    rewriter = _rewriter(kind, rewriter_config)
    eligible = _eligible(generator, MIN_STEPS[kind])
    if n > len(eligible):
        raise BadInput(
            "n",
            n,
            f"at most {len(eligible)}: the L2 of {generator.generator_id} with at least "
            f"{MIN_STEPS[kind]} step(s) and no error",
        )
    chosen = sample_pks(list(eligible), n, seed)
    with transaction.atomic():
        probe = JudgeProbe.objects.create(
            judge=judge,
            generator=generator,
            kind=kind,
            n=n,
            seed=seed,
            rewriter_config=rewriter.as_json() if rewriter else {},
            rewriter_config_path=str(rewriter_config or "") if rewriter else "",
            prompt_text=verbose_template() if rewriter else "",
        )
        if rewriter:
            probe.prompt_sha256 = prompt_sha256(probe.prompt_text)
        items = [_item(probe, position, pk, eligible[pk], seed) for position, pk in enumerate(chosen)]
        JudgeProbeItem.objects.bulk_create(items)
        items_read_stored_verdicts(judge, items)
        backends = {judge_config.backend, *([rewriter.backend] if rewriter else [])}
        parameters = {
            "probe": probe.pk,
            "judge": judge.pk,
            "judge_id": judge.judge_id,
            "generator": generator.pk,
            "generator_id": generator.generator_id,
            "probe_kind": kind,
            "backend": "vllm" if "vllm" in backends else judge_config.backend,
        }
        steps = 2 if kind == ProbeKind.VERBOSE else 1
        probe.job = job_create(
            kind=JUDGE_PROBE, parameters=parameters, total=steps * n, created_by=created_by, enqueue=enqueue
        )
        probe.save(update_fields=["job", "prompt_sha256"])
    return probe


def _rewriter(kind: str, path: Path | str | None) -> ModelConfig | None:
    if kind != ProbeKind.VERBOSE:
        if path:
            raise BadInput("rewriter_config", path, "given only for the verbose probe")
        return None
    if not path:
        raise BadInput("rewriter_config", "", "a generator config (configs/generators/...) for the rewriter")
    try:
        return load_config(path, role="generator")
    except ValueError as exc:  # ConfigError naming the file and field
        raise BadInput("rewriter_config", path, f"a usable generator config ({exc})") from exc


def _eligible(generator: Generator, min_steps: int) -> dict[int, list[str]]:
    """pk -> cleaned steps of the generator's L2 without an error and with at least `min_steps` steps."""
    rows = Generation.objects.filter(generator=generator, error="").values_list("pk", "predicted_steps")
    cleaned = ((pk, clean_steps(steps or [])) for pk, steps in rows.iterator(chunk_size=2_000))
    return {pk: steps for pk, steps in cleaned if len(steps) >= min_steps}


def _item(probe: JudgeProbe, position: int, pk: int, steps: list[str], seed: int) -> JudgeProbeItem:
    perturbed, perturbation = perturb(probe.kind, steps, item_rng(seed, pk))
    return JudgeProbeItem(
        probe=probe,
        generation_id=pk,
        position=position,
        perturbation=perturbation,
        perturbed_steps=perturbed,
        original_tokens=count_tokens(steps),
        perturbed_tokens=count_tokens(perturbed) if perturbed is not None else None,
    )


def items_read_stored_verdicts(judge: Judge, items: Sequence[JudgeProbeItem]) -> list[JudgeProbeItem]:
    """Copy the judge's stored Judgment of each item's original onto the items that have none yet; the
    items still without one."""
    waiting = [item for item in items if not item.original_known and not item.error]
    stored = Judgment.objects.filter(judge=judge, generation_id__in=[i.generation_id for i in waiting])
    by_generation = {j.generation_id: j for j in stored}
    found = [item for item in waiting if item.generation_id in by_generation]
    for item in found:
        _copy_original(item, by_generation[item.generation_id])
    JudgeProbeItem.objects.bulk_update(found, ORIGINAL_FIELDS)
    return [item for item in waiting if item.generation_id not in by_generation]


ORIGINAL_FIELDS = [
    "original_judgment",
    "original_has_failure",
    "original_n_failures",
    "original_parse_failed",
]


def _copy_original(item: JudgeProbeItem, judgment: Judgment) -> None:
    item.original_judgment = judgment
    item.original_has_failure = judgment.has_failure
    item.original_n_failures = judgment.n_failures
    item.original_parse_failed = judgment.parse_failed


# --- running it ---------------------------------------------------------------------------------------------


def judge_probe_job_run(*, job_id: int, on_progress: Callable[[Job], None] | None = None) -> Job | None:
    """Run (or resume) a judge probe job."""
    return job_run(job_id, JUDGE_PROBE, lambda job: ProbeWork(job, on_progress=on_progress))


class ProbeWork(JobWork):
    """The rewrites (verbose), then the judge on the originals and the perturbed L2 (module doc)."""

    def __init__(self, job: Job, on_progress: Callable[[Job], None] | None = None) -> None:
        super().__init__(job, on_progress=on_progress)
        self.probe = JudgeProbe.objects.select_related("judge").get(pk=job.parameters["probe"])
        self.judge = self.probe.judge
        self.judge_config = config_for_judge(self.judge)
        self.verbose = self.probe.kind == ProbeKind.VERBOSE
        self.items: dict[int, JudgeProbeItem] = {}

    def started(self) -> None:
        self.judge_template = prompt_for_judge(self.judge)
        if self.verbose:
            label = f"judge probe #{self.probe.pk}"
            self.rewrite_template = check_prompt(
                self.probe.prompt_text, expected_sha256=self.probe.prompt_sha256, label=label
            )
            self.rewriter = config_of_row(
                self.probe.rewriter_config, role="generator", label=label, refusal="no rewriter config"
            )

    def run(self) -> None:
        items = JudgeProbeItem.objects.filter(probe=self.probe).select_related("generation__procedure")
        self.items = {item.pk: item for item in items}
        self.progress = self._counts()
        self.write_progress(force=True)
        if self.verbose:
            rewrites = [i for i in self.items.values() if i.perturbed_steps is None and not i.error]
            self.stream(
                (self._rewrite_request(item) for item in rewrites),
                store=self._store_rewrites,
                backend_config=self.rewriter.backend_config(),
                count=False,
            )
            if self.stopped:
                return
        pending = [i for i in self.items.values() if i.perturbed_steps is not None and not i.error]
        items_read_stored_verdicts(self.judge, pending)
        self.progress = self._counts()
        self.stream(
            self._judge_requests(pending),
            store=self._store_verdicts,
            backend_config=self.judge_config.backend_config(),
            count=False,
        )

    def _counts(self) -> Progress:
        """Steps done and failed, read off the items: per item its rewrite (verbose) and its judging."""
        progress = Progress()
        steps = 2 if self.verbose else 1
        for item in self.items.values():
            done = int(self.verbose and item.perturbed_steps is not None)
            done += int(item.original_known and item.perturbed_known)
            progress.done += done
            progress.failed += (steps - done) if item.error else 0
        return progress

    # -- the rewrites --
    def _rewrite_request(self, item: JudgeProbeItem) -> LLMRequest:
        steps = clean_steps(item.generation.predicted_steps)
        prompt = verbose_prompt(self.rewrite_template, goal=item.generation.procedure.goal, steps=steps)
        return generation_request(self.rewriter, key=f"r{item.pk}", prompt=prompt, n_steps=len(steps))

    def _store_rewrites(self, results: Sequence[LLMResult]) -> None:
        changed = []
        for result in results:
            item = self.items[int(result.key[1:])]
            self._rewritten(item, result)
            changed.append(item)
        fields = ["perturbed_steps", "perturbed_tokens", "rewrite_output", "error"]
        JudgeProbeItem.objects.bulk_update(changed, fields)
        self.progress = self._counts()

    def _rewritten(self, item: JudgeProbeItem, result: LLMResult) -> None:
        if not result.ok:
            self.keep_error(f"item {item.position}: rewriting: {result.error}")
            item.error = f"rewriting failed: {result.error or 'no answer'}"
            return
        self.usage.add(result)
        item.rewrite_output = result.text or ""
        expected = len(clean_steps(item.generation.predicted_steps))
        steps = clean_steps(extract_steps(result.text))
        if len(steps) != expected:
            item.error = f"the rewrite has {len(steps)} step(s), the original {expected}: not comparable"
            self.keep_error(f"item {item.position}: {item.error}")
            return
        item.perturbed_steps, item.perturbed_tokens = steps, count_tokens(steps)

    # -- the judging --
    def _judge_requests(self, items: Sequence[JudgeProbeItem]) -> Iterator[LLMRequest]:
        for item in items:
            procedure = item.generation.procedure
            l1 = clean_steps(procedure.steps)
            asked = [("p", item.perturbed_steps or [])]
            if not item.original_known:
                asked.append(("o", clean_steps(item.generation.predicted_steps)))
            for side, steps in asked:
                prompt = judge_prompt(
                    self.judge_template, goal=procedure.goal, reference_steps=l1, steps=steps
                )
                key = f"{side}{item.pk}"
                yield judge_request(self.judge_config, key=key, prompt=prompt, n_l1=len(l1), n_l2=len(steps))

    def _store_verdicts(self, results: Sequence[LLMResult]) -> None:
        originals = [(self.items[int(r.key[1:])], r) for r in results if r.key.startswith("o")]
        perturbed = [(self.items[int(r.key[1:])], r) for r in results if r.key.startswith("p")]
        for item, result in [*originals, *perturbed]:
            if result.ok:
                self.usage.add(result)
            else:
                side = "original" if result.key.startswith("o") else "perturbed L2"
                self.keep_error(f"item {item.position}: judging the {side}: {result.error}")
                item.error = f"judging the {side} failed: {result.error or 'no answer'}"
        stored = judgments_store(
            judge=self.judge,
            results=[(item.generation, result) for item, result in originals],
            job_pk=self.job.pk,
        )
        by_generation = {judgment.generation_id: judgment for judgment in stored}
        for item, _ in originals:
            if item.generation_id in by_generation:
                _copy_original(item, by_generation[item.generation_id])
        for item, result in perturbed:
            if result.ok:
                _read_perturbed(item, result)
        changed = list({item.pk: item for item, _ in [*originals, *perturbed]}.values())
        JudgeProbeItem.objects.bulk_update(changed, [*ORIGINAL_FIELDS, *PERTURBED_FIELDS, "error"])
        self.progress = self._counts()


PERTURBED_FIELDS = [
    "perturbed_has_failure",
    "perturbed_n_failures",
    "perturbed_parse_failed",
    "perturbed_failures",
    "perturbed_output",
]


def _read_perturbed(item: JudgeProbeItem, result: LLMResult) -> None:
    procedure = item.generation.procedure
    steps = item.perturbed_steps or []
    parsed = parse_judge_output(result.text, n_l1=len(clean_steps(procedure.steps)), n_l2=len(steps))
    item.perturbed_has_failure = parsed.has_failure
    item.perturbed_n_failures = parsed.n_failures
    item.perturbed_parse_failed = parsed.parse_failed
    item.perturbed_output = result.text or ""
    item.perturbed_failures = [_failure_json(f) for f in parsed.failures]


def _failure_json(failure: Any) -> dict[str, Any]:
    return {"failure": failure.description, "L1_steps": failure.l1_steps, "L2_steps": failure.l2_steps}
