"""python manage.py leaderboard [--judge ID] [--format table|csv|json]"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from h2e_site.web import SafeDictWriter
from judging.selectors import how2score_leaderboard, leaderboard_json

COLUMNS = [
    "generator_model",
    "generator_id",
    "judge_model",
    "judge_id",
    "how2score_percent",
    "how2score_ci_low",
    "how2score_ci_high",
    "strict_how2score_percent",
    "strict_how2score_ci_low",
    "strict_how2score_ci_high",
    "n_examples",
    "n_with_failures",
    "n_parse_failed",
    "avg_failures_per_example",
]
_NUMERIC = {
    "how2score_percent",
    "how2score_ci_low",
    "how2score_ci_high",
    "strict_how2score_percent",
    "strict_how2score_ci_low",
    "strict_how2score_ci_high",
    "n_examples",
    "n_with_failures",
    "n_parse_failed",
    "avg_failures_per_example",
}


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if key == "avg_failures_per_example" else f"{value:.1f}"
    return str(value)


def format_table(rows: list[dict[str, Any]]) -> str:
    """Aligned columns: text left, numbers right; How2Score to one decimal as the reference prints it."""
    cells = [[_cell(c, row[c]) for c in COLUMNS] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(COLUMNS)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if c in _NUMERIC else v.ljust(w)
            for c, v, w in zip(COLUMNS, values, widths, strict=True)
        ).rstrip()

    return "\n".join([line(COLUMNS), line(["-" * w for w in widths]), *(line(r) for r in cells)])


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # a read-only query: start fast (no URL or model checks)
    help = "How2Score per generator x judge (h2e-compatible score, strict score, counts), best first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--judge", action="append", default=[], metavar="ID", help="judge_id (repeatable)"
        )
        parser.add_argument("--format", choices=["table", "csv", "json"], default="table")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = leaderboard_json(how2score_leaderboard(judge_ids=options["judge"] or None))
        if options["format"] == "json":
            self.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2))
        elif options["format"] == "csv":
            writer = SafeDictWriter(self.stdout, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        elif rows:
            self.stdout.write(format_table(rows))
        else:
            self.stdout.write("No judgments yet.")
