"""python manage.py probe_judge --judge ID|--judge-config FILE --generator ID --kind verbose|delete_step|
swap_steps [--n 50] [--seed 0] [--rewriter-config FILE] [--wait | --inline]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from h2e_site.inputs import BadInput
from h2e_site.jobs.follow import run_or_follow
from h2e_site.llm.config import ConfigError, load_config
from judging.configs import judge_for_config
from judging.models import Generator, Judge
from judging.probes.forms import DEFAULT_N
from judging.probes.jobs import judge_probe_create, judge_probe_job_run
from judging.probes.models import ProbeKind
from judging.probes.results import probe_results


class Command(BaseCommand):
    help = (
        "Probe a judge (paper §D.1): sample a generator's L2, perturb each (verbose: an LLM rewrites it "
        "more verbosely with the same content; delete_step; swap_steps), and have the judge judge the "
        "original and the perturbed one, as a job. Prints the job id; --wait follows it with a progress "
        "bar, --inline runs it here (with the bar) and prints the probe's figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        judge = parser.add_mutually_exclusive_group(required=True)
        judge.add_argument("--judge", metavar="ID", help="a judge's judge_id (or row id) that has a config")
        judge.add_argument("--judge-config", type=Path, metavar="FILE", help="a judge config (YAML)")
        parser.add_argument("--generator", required=True, metavar="ID", help="generator_id (or row id)")
        parser.add_argument("--kind", required=True, choices=ProbeKind.values)
        parser.add_argument("--n", type=int, default=DEFAULT_N, help=f"L2 sampled (default {DEFAULT_N})")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--rewriter-config", type=Path, metavar="FILE", help="verbose: a generator config"
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the job until it finishes")
        mode.add_argument("--inline", action="store_true", help="run the job in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        generator = _row(Generator, "generator_id", options["generator"], "generator")
        try:
            with transaction.atomic():
                judge = (
                    judge_for_config(load_config(options["judge_config"], role="judge"))
                    if options["judge_config"]
                    else _row(Judge, "judge_id", options["judge"], "judge")
                )
                probe = judge_probe_create(
                    judge=judge,
                    generator=generator,
                    kind=options["kind"],
                    n=options["n"],
                    seed=options["seed"],
                    rewriter_config=options["rewriter_config"],
                    enqueue=not options["inline"],
                )
        except (BadInput, ConfigError) as refused:
            raise CommandError(str(refused)) from refused
        assert probe.job is not None
        self.stdout.write(
            f"judge probe {probe.pk} (job {probe.job.pk}): {probe.get_kind_display()}, {judge.model} "
            f"({judge.judge_id}) on {probe.n} L2 of {generator.generator_id}"
        )
        run_or_follow(
            self,
            probe.job,
            judge_probe_job_run,
            inline=options["inline"],
            wait=options["wait"],
            disable=options["verbosity"] == 0,
            label="judge probe",
        )
        if options["inline"] or options["wait"]:
            self.stdout.write(_figures(probe_results(probe)))


def _row(model: type[Generator] | type[Judge], field: str, ref: str, what: str) -> Any:
    row = model.objects.filter(**{field: ref}).first()
    if row is None and ref.isdigit():
        row = model.objects.filter(pk=int(ref)).first()
    if row is None:
        raise CommandError(f"--{what}: no {what} {ref!r} (give a {field} or a row id)")
    return row


def _figures(result: Any) -> str:
    counts = f"{result.n_scored} of {result.n_items} scored"
    ratio = result.length_ratio
    length = f"length ratio {ratio.mean:.2f}" if ratio.mean is not None else "no length ratio"
    if result.change is not None:
        change = result.change
        if change.delta is None:
            return f"{counts}; {length}"
        low, high = change.interval
        return (
            f"{counts}: How2Score {change.original_score:.3f} -> {change.perturbed_score:.3f}, change "
            f"{change.delta:+.3f} (95% {low:+.3f} to {high:+.3f}), McNemar p = {change.p_value:.4f}; {length}"
        )
    found = result.detection
    if found.rate is None:
        return f"{counts}; {length}"
    low, high = found.interval
    return f"{counts}: detection rate {found.rate:.3f} (95% Wilson {low:.3f}-{high:.3f}); {length}"
