"""python manage.py judge --judge-config FILE --generator ID [--only-parse-failed | --replace] [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from h2e_site.jobs.answer_command import AnsweringCommand
from h2e_site.jobs.models import Job
from h2e_site.llm.config import load_config
from judging.configs import judge_for_config
from judging.judge_jobs import JudgeMode, judge_job_create
from judging.models import Generator


class Command(AnsweringCommand):
    help = (
        "Judge a generator's L2 with the judge a YAML config describes (How2Score), as a job run by a Celery "
        "worker: by default the generations it has not judged yet."
    )

    def add_job_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--judge-config", type=Path, required=True, metavar="FILE")
        parser.add_argument("--generator", required=True, metavar="ID", help="generator_id (or row id)")
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--only-parse-failed", action="store_true", help="re-judge parse failures and API errors only"
        )
        which.add_argument("--replace", action="store_true", help="re-judge everything, replacing judgments")

    def start(self, options: dict[str, Any]) -> tuple[Job, str]:
        generator = _generator(options["generator"])
        mode: JudgeMode = (
            "parse_failed" if options["only_parse_failed"] else "replace" if options["replace"] else "missing"
        )
        judge = judge_for_config(load_config(options["judge_config"], role="judge"))
        job = judge_job_create(judge=judge, generator=generator, mode=mode)
        line = (
            f"job {job.pk}: judge {generator.generator_id} with {judge.model} ({judge.judge_id}), "
            f"mode {mode}, {job.total} generation(s)"
        )
        return job, line


def _generator(ref: str) -> Generator:
    generator = Generator.objects.filter(generator_id=ref).first()
    if generator is None and ref.isdigit():
        generator = Generator.objects.filter(pk=int(ref)).first()
    if generator is None:
        raise CommandError(f"no generator {ref!r} (give a generator_id or a row id)")
    return generator
