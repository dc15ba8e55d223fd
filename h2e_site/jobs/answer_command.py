"""The command that starts a job answering items with a configured model (one per kind of answer), written
once: the kind's own arguments, then --wait; the model's row and its job made in one transaction; a
ValueError (a ConfigError, PromptChanged) is the command's error, and when the model has answered everything
asked for (NothingToAsk) the command says so and starts nothing; it prints the line the kind writes about
the job, and with --wait follows the job with a progress bar."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from .answering import NothingToAsk
from .follow import follow_job
from .models import Job


class AnsweringCommand(BaseCommand):
    """A kind supplies add_job_arguments() and start()."""

    def add_job_arguments(self, parser: CommandParser) -> None:
        """The kind's own arguments (--wait follows them)."""
        raise NotImplementedError

    def start(self, options: dict[str, Any]) -> tuple[Job, str]:
        """The job started (inside the command's transaction) and the line that says what it does; a
        CommandError for what the options name and does not exist."""
        raise NotImplementedError

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_job_arguments(parser)
        parser.add_argument("--wait", action="store_true", help="follow the job until it finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with transaction.atomic():
                job, line = self.start(options)
        except NothingToAsk as nothing:
            self.stdout.write(str(nothing))
            return
        except ValueError as exc:  # ConfigError, PromptChanged
            raise CommandError(str(exc)) from exc
        self.stdout.write(line)
        if options["wait"]:
            follow_job(self, job, disable=options["verbosity"] == 0)
