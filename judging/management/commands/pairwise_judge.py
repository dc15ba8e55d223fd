"""python manage.py pairwise_judge --judge-config FILE --pairs-file FILE [--wait]"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from h2e_site.jobs.follow import follow_job
from h2e_site.llm.config import ConfigError, load_config
from judging.configs import judge_for_config
from judging.pairwise_jobs import pairwise_judge_job_create

_SEPARATOR = re.compile(r"[\s,]+")


class Command(BaseCommand):
    help = (
        "Ask the judge a YAML config describes which of two L2s of one goal has fewer critical failures, for "
        "each pair of the file, in both orders, as a job run by a Celery worker (the pairs still without a "
        "verdict). The file: one pair per line, two generation ids separated by a space or a comma; blank "
        "lines and lines starting with # are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--judge-config", type=Path, required=True, metavar="FILE")
        parser.add_argument("--pairs-file", type=Path, required=True, metavar="FILE")
        parser.add_argument("--wait", action="store_true", help="follow the job until it finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        pairs = _pairs(options["pairs_file"])
        try:
            config = load_config(options["judge_config"], role="judge")
            with transaction.atomic():
                judge = judge_for_config(config)
                job = pairwise_judge_job_create(pairs, judge=judge)
        except (ConfigError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        n_pairs = len(job.parameters["pairs"])
        self.stdout.write(
            f"job {job.pk}: pairwise judge with {judge.model} ({judge.judge_id}), {n_pairs} pair(s), "
            f"{job.total} question(s)"
        )
        if options["wait"]:
            follow_job(self, job, disable=options["verbosity"] == 0)


def _pairs(path: Path) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--pairs-file {path}: {exc}") from exc
    lines = [line.strip() for line in text.splitlines()]
    return [_SEPARATOR.split(line) for line in lines if line and not line.startswith("#")]
