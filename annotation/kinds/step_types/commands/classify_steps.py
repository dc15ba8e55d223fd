"""python manage.py classify_steps --study SLUG --config FILE [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.base.models import Study
from annotation.kinds.step_types.classify import classifier_for_config, classify_job_create
from annotation.kinds.step_types.name import KIND
from h2e_site.jobs.answer_command import AnsweringCommand
from h2e_site.jobs.models import Job


class Command(AnsweringCommand):
    help = (
        "Classify the step-type candidates of a step-types study with the model a YAML config describes "
        "(configs/step_types/), as a job run by a Celery worker: the candidates it has not answered yet. "
        "Prints the job id, or with --wait follows it with a progress bar."
    )

    def add_job_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, metavar="SLUG", help="a step-types study")
        parser.add_argument(
            "--config", type=Path, required=True, metavar="FILE", help="a step-type model config"
        )

    def start(self, options: dict[str, Any]) -> tuple[Job, str]:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        if study.kind != KIND:
            raise CommandError(f"study {study.slug!r} is a {study.kind} study, not a step-types study")
        classifier = classifier_for_config(options["config"])
        job = classify_job_create(classifier=classifier, study=study)
        demo = " (demo model: predictions not meaningful)" if classifier.is_demo_model else ""
        line = (
            f"job {job.pk}: classify the step types of study {study.slug} with {classifier.model} "
            f"({classifier.classifier_id}){demo}, {job.total} candidate(s)"
        )
        return job, line
