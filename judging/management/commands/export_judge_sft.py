"""python manage.py export_judge_sft --judge JUDGE_ID --out F [--split train] [--format jsonl|parquet]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from judging.dataset_files import FILE_FORMATS, file_format_for
from judging.how2train import SplitNotMade
from judging.judge_sft import judge_sft_export, judge_sft_judgments
from judging.models import Judge
from mining.models import Split


class Command(BaseCommand):
    help = (
        "Write a judge's parsed judgments as chat SFT rows for distilling a judge (paper §4.3): the judge "
        "prompt as the studio builds it (user) and the verdict as the judge's JSON output (assistant); JSONL "
        "or Parquet; --split train keeps only procedures of How2Train."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--judge", required=True, metavar="JUDGE_ID")
        parser.add_argument("--out", type=Path, required=True, metavar="FILE")
        parser.add_argument("--split", choices=Split.values, default=None, help="default: every split")
        parser.add_argument(
            "--format",
            choices=FILE_FORMATS,
            default=None,
            help="default: parquet for a .parquet file, else jsonl",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        judge = Judge.objects.filter(judge_id=options["judge"]).first()
        if judge is None:
            raise CommandError(f"--judge: no judge {options['judge']!r} (manage.py leaderboard lists them)")
        try:
            total = judge_sft_judgments(judge=judge, split=options["split"]).count()
            with tqdm(
                total=total, desc="export_judge_sft", unit="row", disable=options["verbosity"] == 0
            ) as bar:
                report = judge_sft_export(
                    path=out,
                    judge=judge,
                    split=options["split"],
                    file_format=file_format_for(out, options["format"]),
                    progress=bar.update,
                )
        except SplitNotMade as exc:
            raise CommandError(f"--split: {exc}") from exc
        except ValueError as exc:  # the judge's config or prompt (ConfigError, PromptChanged)
            raise CommandError(f"--judge: {exc}") from exc
        self.stdout.write(
            f"{report.n} judgment(s) of {judge.judge_id} written to {out} "
            f"({report.n_parse_failed} parse failure(s) left out)"
        )
