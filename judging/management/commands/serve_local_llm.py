"""python manage.py serve_local_llm [--host 127.0.0.1] [--port 8080]: serve the embedded model."""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.llm.local import server_command, server_environment


class Command(BaseCommand):
    help = (
        "Serve the embedded SmolLM2-135M-Instruct model with llama.cpp's OpenAI-compatible server, in the "
        "foreground. Point the app at it with H2E_LOCAL_LLM_URL (default http://127.0.0.1:8080/v1)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8080)
        parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="CPU threads")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            command = server_command(options["host"], options["port"], options["threads"])
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Embedded model at http://{options['host']}:{options['port']}/v1 (Ctrl-C stops it)"
        )
        self.stdout.flush()
        # become the server: signals (Ctrl-C, docker stop) reach it directly and no child is orphaned
        os.execve(command[0], command, server_environment())
