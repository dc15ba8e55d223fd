"""python manage.py export_how2train --out F [--form open-instruct|plain] [--format jsonl|parquet]
[--n N --seed S [--unbalanced]]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from judging.dataset_files import FILE_FORMATS, file_format_for
from judging.how2train import ROW_FORMS, how2train_check, how2train_count, how2train_export


class Command(BaseCommand):
    help = (
        "Write How2Train (the procedures of split train: mined, not in the benchmark, deduplicated against "
        "it) as RL prompts: open-instruct rows (messages with the inference prompt, ground_truth, dataset "
        "'how2score') or plain rows, as JSONL or Parquet; all of them or a sample of --n drawn with --seed, "
        "balanced across topics unless --unbalanced."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, metavar="FILE")
        parser.add_argument("--form", choices=ROW_FORMS, default="open-instruct")
        parser.add_argument(
            "--format",
            choices=FILE_FORMATS,
            default=None,
            help="default: parquet for a .parquet file, else jsonl",
        )
        parser.add_argument("--n", type=int, default=None, help="a sample of this many (default: every one)")
        parser.add_argument("--seed", type=int, default=None, help="the sample's seed (needed with --n)")
        parser.add_argument(
            "--unbalanced", action="store_true", help="a uniform sample instead of an equal share per topic"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        n, seed = options["n"], options["seed"]
        if options["unbalanced"] and n is None:
            raise CommandError("--unbalanced: only with --n (a sample size)")
        try:
            how2train_check(form=options["form"], n=n, seed=seed, balanced=not options["unbalanced"])
            total = how2train_count(n=n)
            with tqdm(
                total=total, desc="export_how2train", unit="row", disable=options["verbosity"] == 0
            ) as bar:
                report = how2train_export(
                    path=out,
                    form=options["form"],
                    file_format=file_format_for(out, options["format"]),
                    n=n,
                    seed=seed,
                    balanced=not options["unbalanced"],
                    progress=bar.update,
                )
        except ValueError as exc:
            raise CommandError(_as_option(str(exc))) from exc
        for line in report.lines():
            self.stdout.write(line)
        self.stdout.write(f"to {out}")


def _as_option(message: str) -> str:
    """A service's "n: ..." as the command's "--n: ..." (the option the person typed)."""
    field, sep, rest = message.partition(": ")
    if sep and field in {"n", "seed", "form", "format"}:
        return f"--{field}: {rest}"
    return message
