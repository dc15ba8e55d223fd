"""A run's checkpoints on the benchmark (paper Table 2, and Table 13's external judges).

Registering: a checkpoint is a generator config (e.g. a vLLM or OpenAI-compatible server serving that
checkpoint) and its step; the config makes a Generator as `generate --generator-config` does
(judging/configs.py), and the existing generate and judge jobs answer and judge the benchmark with it.

The table (checkpoint_table), one row per checkpoint in step order, the first (lowest step: the original
model) being what each Δ is against:
- How2Score under the judge (the run's judge by default) with its 95 % Wilson interval, the leaderboard's
  figure (judging/selectors.py How2Score: parse failures left out).
- Δ = How2Score - the first checkpoint's How2Score, in points; beside it the leaderboard's paired test
  (judging/paired.py): exact McNemar on the procedures both have a scored verdict on, the discordant counts
  being "only the first passes" and "only this one passes", Holm-adjusted across the table's rows.
- Generated tokens (mean) and gen/ref ratio (mean per-example 100 * |gen| / |ref|), the leaderboard's
  (judging/selectors.py generator_metrics).
- The same How2Score, Δ and test under a second ("external") judge, when one is chosen.
- Out-of-domain scores imported from a file (judging/training/ood.py): per benchmark the score and its
  Δ = score - the first checkpoint's score; Δ_OOD = the mean over the benchmarks both have of the Δ, each
  negated where lower is better, so that a positive Δ_OOD is always a gain (Table 2's last row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction

from h2e_site.bounds import INT32_MAX, Range
from h2e_site.llm.config import ConfigError, ModelConfig, load_config

from .. import paired, selectors
from ..configs import generator_for_config, generator_id_of
from ..models import Generator, Judge
from .checkpoint_models import LABEL_MAX, Checkpoint, OODResult
from .models import TrainingRun

if TYPE_CHECKING:
    from django.contrib.auth.models import User

STEP = Range(0, INT32_MAX)


class CheckpointRefused(ValueError):
    """A checkpoint that cannot be registered; the message names the field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


# --- registering ------------------------------------------------------------------------------------------


def checkpoint_register(
    *,
    run: TrainingRun,
    step: int,
    config_path: Path | str,
    label: str = "",
    created_by: User | None = None,
) -> Checkpoint:
    """The checkpoint of `run` at `step`, answering as the Generator the config at `config_path` makes.
    ConfigError (naming the file and field) for a config that does not load; CheckpointRefused for a step
    out of range, a label that is a number or taken, a step already registered with another generator, or a
    config whose generator is already another checkpoint served elsewhere."""
    STEP.check("step", step)
    label = _checked_label(run, step, label)
    config = load_config(config_path, role="generator")
    with transaction.atomic():
        _check_generator_free(run, step, config, str(config_path))
        generator = generator_for_config(config)
        existing = Checkpoint.objects.select_for_update().filter(run=run, step=step).first()
        if existing is not None and existing.generator_id != generator.pk:
            raise CheckpointRefused(
                "step",
                f"step {step} of run {run.name!r} is already {existing.generator.model} "
                f"({existing.generator.generator_id}): a step keeps the generator it was registered with",
            )
        checkpoint = existing or Checkpoint(run=run, step=step, generator=generator, created_by=created_by)
        checkpoint.label, checkpoint.config_path = label, _shown_path(config_path)
        checkpoint.save()
    return checkpoint


def _shown_path(path: Path | str) -> str:
    """The config's path from the repository root when it is inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(path)


def _checked_label(run: TrainingRun, step: int, label: str) -> str:
    label = label.strip()
    if len(label) > LABEL_MAX:
        raise CheckpointRefused("label", f"at most {LABEL_MAX} characters")
    if label.isdigit():
        raise CheckpointRefused("label", f"{label!r} is a number: it would read as a step in an OOD file")
    taken = Checkpoint.objects.filter(run=run, label=label).exclude(step=step).first() if label else None
    if taken is not None:
        raise CheckpointRefused("label", f"{label!r} is already step {taken.step} of run {run.name!r}")
    return label


def _servers(stored: dict[str, Any]) -> tuple[Any, ...]:
    return stored.get("base_url"), tuple(stored.get("base_urls") or ())


def _check_generator_free(run: TrainingRun, step: int, config: ModelConfig, source: str) -> None:
    """Refuse a config whose generator (its id hashes the model, not the server) is already a checkpoint of
    this run at another step, or of another run on other servers: the row would take this config's server
    and the other checkpoint's answers would come from the wrong model."""
    generator_id = generator_id_of(config)
    others = Checkpoint.objects.filter(generator__generator_id=generator_id).exclude(run=run, step=step)
    for other in others.select_related("run", "generator"):
        same_run = other.run_id == run.pk
        if same_run or _servers(other.generator.config) != _servers(config.as_json()):
            raise ConfigError(
                source,
                "model",
                f"makes generator {generator_id}, already step {other.step} of run {other.run.name!r}"
                + ("" if same_run else " on other servers")
                + ": give each checkpoint its own model name (vLLM's --served-model-name)",
            )


# --- the table ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedDelta:
    """A checkpoint against the first under one judge: the exact McNemar test on the shared procedures."""

    n_shared: int
    first_only: int  # procedures where only the first checkpoint passes
    this_only: int  # procedures where only this checkpoint passes
    p_value: float
    p_holm: float

    @property
    def separable(self) -> bool:
        return self.p_holm < paired.ALPHA

    def as_json(self) -> dict[str, Any]:
        return {
            "n_shared": self.n_shared,
            "first_only": self.first_only,
            "this_only": self.this_only,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "separable": self.separable,
        }


@dataclass(frozen=True)
class JudgeCell:
    """One checkpoint under one judge: How2Score (None before any judgment), Δ and the paired test."""

    score: selectors.How2Score | None
    delta_points: float | None = None
    test: PairedDelta | None = None

    def as_json(self) -> dict[str, Any]:
        score = self.score
        interval = score.interval_percent if score else None
        return {
            "how2score_percent": score.how2score_percent if score else None,
            "how2score_ci_low": interval[0] if interval else None,
            "how2score_ci_high": interval[1] if interval else None,
            "n_examples": score.n_examples if score else 0,
            "n_parse_failed": score.n_parse_failed if score else 0,
            "delta_points": self.delta_points,
            "test": self.test.as_json() if self.test else None,
        }


@dataclass(frozen=True)
class OODCell:
    score: float | None
    delta: float | None  # score - the first checkpoint's score (as given, whatever the direction)
    higher_is_better: bool = True

    @property
    def gain(self) -> float | None:
        """The Δ as a gain: negated where lower is better (what Δ_OOD averages, and the cell's colour)."""
        if self.delta is None:
            return None
        return self.delta if self.higher_is_better else -self.delta


@dataclass(frozen=True)
class Benchmark:
    name: str
    higher_is_better: bool


@dataclass(frozen=True)
class CheckpointRow:
    checkpoint: Checkpoint
    judge: JudgeCell
    external: JudgeCell | None
    metrics: selectors.GeneratorMetrics
    ood: list[OODCell]  # in the table's benchmark order
    ood_mean_delta: float | None  # Δ_OOD: mean gain over the benchmarks both checkpoints have
    ood_n: int  # how many benchmarks Δ_OOD averages

    def as_json(self, benchmarks: Sequence[Benchmark]) -> dict[str, Any]:
        generator = self.checkpoint.generator
        return {
            "step": self.checkpoint.step,
            "label": self.checkpoint.label,
            "generator_id": generator.generator_id,
            "generator_model": generator.model,
            "judge": self.judge.as_json(),
            "external": self.external.as_json() if self.external else None,
            "n_generations": self.metrics.n_generations,
            "avg_tokens": self.metrics.avg_tokens,
            "gen_ref_ratio_percent": self.metrics.gen_ref_ratio_percent,
            "ood": [
                {"benchmark": b.name, "score": cell.score, "delta": cell.delta}
                for b, cell in zip(benchmarks, self.ood, strict=True)
            ],
            "ood_mean_delta": self.ood_mean_delta,
            "ood_n": self.ood_n,
        }


@dataclass(frozen=True)
class CheckpointTable:
    run: TrainingRun
    judge: Judge | None
    external: Judge | None
    rows: list[CheckpointRow]
    benchmarks: list[Benchmark] = field(default_factory=list)

    @property
    def first(self) -> Checkpoint | None:
        return self.rows[0].checkpoint if self.rows else None

    @property
    def judges(self) -> list[Judge]:
        """The judge, then the external judge (those the table shows)."""
        return [judge for judge in (self.judge, self.external) if judge is not None]

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run.name,
            "judge": _judge_json(self.judge),
            "external": _judge_json(self.external),
            "benchmarks": [{"name": b.name, "higher_is_better": b.higher_is_better} for b in self.benchmarks],
            "checkpoints": [row.as_json(self.benchmarks) for row in self.rows],
        }


def _judge_json(judge: Judge | None) -> dict[str, str] | None:
    return {"judge_id": judge.judge_id, "model": judge.model} if judge else None


def run_checkpoints(run: TrainingRun) -> list[Checkpoint]:
    """The run's checkpoints in step order, each with its generator."""
    return list(run.checkpoints.select_related("generator").order_by("step"))


def table_judge(run: TrainingRun, checkpoints: Sequence[Checkpoint]) -> Judge | None:
    """The judge the table shows by default: the run's (its reward's judge), else the leaderboard's default
    among the judges of its checkpoints."""
    if run.judge is not None:
        return run.judge
    judges = Judge.objects.filter(judgments__generator__in=[c.generator_id for c in checkpoints]).distinct()
    return selectors.default_judge(list(judges.by_model()))


def checkpoint_table(
    run: TrainingRun, *, judge: Judge | None = None, external: Judge | None = None
) -> CheckpointTable:
    """The run's checkpoint table (see the module doc) under `judge` (default table_judge) and, when given,
    the `external` judge."""
    checkpoints = run_checkpoints(run)
    judge = judge or table_judge(run, checkpoints)
    generators = [c.generator for c in checkpoints]
    cells = _judge_cells(judge, generators)
    external_cells = _judge_cells(external, generators) if external else None
    metrics = selectors.generator_metrics(generator_ids=[g.generator_id for g in generators])
    benchmarks, ood = _ood(checkpoints)
    rows = [
        CheckpointRow(
            checkpoint=checkpoint,
            judge=cells[i],
            external=external_cells[i] if external_cells else None,
            metrics=metrics.get(checkpoint.generator.generator_id, selectors.GeneratorMetrics()),
            ood=ood[i],
            ood_mean_delta=_mean_gain(ood[i]),
            ood_n=sum(cell.delta is not None for cell in ood[i]),
        )
        for i, checkpoint in enumerate(checkpoints)
    ]
    return CheckpointTable(run, judge, external, rows, benchmarks)


def _judge_cells(judge: Judge | None, generators: Sequence[Generator]) -> list[JudgeCell]:
    """Each generator's How2Score under `judge`, its Δ against the first and the paired test (Holm across
    the rows that have one)."""
    if judge is None or not generators:
        return [JudgeCell(None) for _ in generators]
    ids = [g.generator_id for g in generators]
    rows = selectors.how2score_leaderboard(judge_ids=[judge.judge_id], generator_ids=ids)
    scores = {row.generator_id: row.score for row in rows}
    verdicts = paired.load_verdicts([judge.judge_id], generator_pks=[g.pk for g in generators])
    counts = _discordant(verdicts.get(judge.judge_id), ids)
    adjusted = iter(paired.holm([paired.mcnemar_exact_p(a, b) for _, a, b in counts.values()]))
    first = scores.get(ids[0])
    cells = []
    for generator_id in ids:
        score = scores.get(generator_id)
        is_first = generator_id == ids[0]
        delta = (
            score.how2score_percent - first.how2score_percent if score and first and not is_first else None
        )
        test = None
        if generator_id in counts:
            shared, first_only, this_only = counts[generator_id]
            p = paired.mcnemar_exact_p(first_only, this_only)
            test = PairedDelta(shared, first_only, this_only, p, next(adjusted))
        cells.append(JudgeCell(score, delta, test))
    return cells


def _discordant(verdicts: paired.Verdicts | None, ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """generator_id -> (shared, only the first passes, only it passes) for every checkpoint after the first
    that has verdicts when the first has too (in the table's order)."""
    if verdicts is None or ids[0] not in verdicts.generator_ids:
        return {}
    f = verdicts.row(ids[0])
    passed, failed = verdicts.passed, verdicts.failed
    counts = {}
    for generator_id in ids[1:]:
        if generator_id not in verdicts.generator_ids:
            continue
        i = verdicts.row(generator_id)
        shared = int(((passed[f] | failed[f]) & (passed[i] | failed[i])).sum())
        counts[generator_id] = (
            shared,
            int((passed[f] & failed[i]).sum()),
            int((passed[i] & failed[f]).sum()),
        )
    return counts


def _ood(checkpoints: Sequence[Checkpoint]) -> tuple[list[Benchmark], list[list[OODCell]]]:
    """The run's benchmarks (in the order they were first imported) and each checkpoint's cells."""
    results = list(
        OODResult.objects.filter(checkpoint__in=checkpoints)
        .order_by("pk")
        .values_list("checkpoint_id", "benchmark", "score", "higher_is_better")
    )
    names: dict[str, bool] = {}
    for _, name, _, higher in results:
        names[name] = names.get(name, True) and higher is not False
    benchmarks = [Benchmark(name, higher) for name, higher in names.items()]
    scores: dict[tuple[int, str], float] = {(pk, name): score for pk, name, score, _ in results}
    first = checkpoints[0].pk if checkpoints else 0
    table = []
    for checkpoint in checkpoints:
        row = []
        for benchmark in benchmarks:
            score, base = scores.get((checkpoint.pk, benchmark.name)), scores.get((first, benchmark.name))
            delta = (
                score - base if checkpoint.pk != first and score is not None and base is not None else None
            )
            row.append(OODCell(score, delta, benchmark.higher_is_better))
        table.append(row)
    return benchmarks, table


def _mean_gain(cells: Sequence[OODCell]) -> float | None:
    """Δ_OOD: the mean of the Δ, each negated where lower is better; None without any Δ."""
    gains = [cell.gain for cell in cells if cell.gain is not None]
    return sum(gains) / len(gains) if gains else None
