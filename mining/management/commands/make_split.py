"""python manage.py make_split --per-topic 500 --seed S [--threshold 0.65] [--no-dedup]"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.embeddings.specs import DEFAULT_EMBEDDING_MODEL
from h2e_site.embeddings.store import StoredEmbed
from mining.splits import DEDUP_THRESHOLD, split_make


class Command(BaseCommand):
    help = (
        "Draw the topic-balanced How2Bench split from the mined pool (per-topic procedures per topic, fixed "
        "seed); the rest becomes How2Train, except train procedures whose max cosine similarity to bench "
        "(all-MiniLM-L6-v2, goal + numbered steps) is >= the threshold, which stay in the pool."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--per-topic", type=int, default=500, help="bench procedures per topic (500)")
        parser.add_argument("--seed", type=int, required=True)
        parser.add_argument("--threshold", type=float, default=DEDUP_THRESHOLD, help="dedup cosine (0.65)")
        parser.add_argument("--no-dedup", action="store_true", help="skip the train/bench deduplication")
        parser.add_argument(
            "--embedding-model",
            default=DEFAULT_EMBEDDING_MODEL,
            help="minilm (default: the packaged all-MiniLM-L6-v2, numpy) or a sentence-transformers model "
            "name or folder, e.g. Qwen/Qwen3-Embedding-0.6B (needs sentence-transformers and torch)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            embed = None if options["no_dedup"] else StoredEmbed(options["embedding_model"])
            if embed is not None:
                embed.model  # noqa: B018 (which model it is: another than minilm is loaded here, or refused)
            report = split_make(
                per_topic=options["per_topic"],
                seed=options["seed"],
                dedup=not options["no_dedup"],
                threshold=options["threshold"],
                embed=embed,
            )
        except (ValueError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(line)
