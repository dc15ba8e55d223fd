"""How2Train out: the procedures of split "train" as RL prompts (paper §6, §E.1).

mining/splits.py cuts the pool into bench and train and leaves in the pool every train candidate too close to
bench (max cosine >= 0.65), so split "train" is How2Train: mined, not in the benchmark, deduplicated against
it. Two row forms:

- open-instruct (its RLVR datasets' columns, e.g. allenai/RLVR-GSM): `messages`, one user message holding the
  inference prompt the studio sends to generate L2 (judging/prompting.py `generation_prompt` with
  prompts/inference_inst.txt, the procedure's goal and resources, n = its number of reference steps);
  `ground_truth`, a JSON string {"procedure_id", "goal", "resources", "steps"} (the reward API's contract);
  `dataset` "how2score" (the verifier's name); and `procedure_id`, `source_example_id`, `topic` beside them.
- plain: `procedure_id`, `source_example_id`, `topic`, `goal`, `resources`, `steps`, `prompt`.

A sample (`n` with a `seed`) is topic-balanced by default, as the paper samples 100K across its 14 topics:
each topic gets an equal share of n (the first topics in name order one more when n does not divide), a topic
with fewer procedures than its share gives all it has and the rest is shared among the others in the same
way; procedures without a topic are not drawn. Unbalanced: a uniform sample of the whole split. Rows come in
source_example_id order either way.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from django.db.models import QuerySet

from h2e_site.bounds import SEED, Range
from h2e_site.llm.prompts import GENERATION_PROMPTS, PROMPTS_DIR, prompt_sha256, read_prompt
from mining.models import Procedure, Split

from .dataset_files import CHUNK, Columns, FileFormat, Progress, Row, rows_write
from .prompting import generation_prompt

RowForm = Literal["open-instruct", "plain"]
ROW_FORMS: tuple[str, ...] = ("open-instruct", "plain")
DATASET_NAME = "how2score"  # the open-instruct verifier's name (REWARD-API: ground_truth for trainers)
SAMPLE_SIZE = Range(1, 10_000_000)

OPEN_INSTRUCT_COLUMNS: Columns = (
    ("messages", "messages"),
    ("ground_truth", "string"),
    ("dataset", "string"),
    ("procedure_id", "int64"),
    ("source_example_id", "string"),
    ("topic", "string"),
)
PLAIN_COLUMNS: Columns = (
    ("procedure_id", "int64"),
    ("source_example_id", "string"),
    ("topic", "string"),
    ("goal", "string"),
    ("resources", "strings"),
    ("steps", "strings"),
    ("prompt", "string"),
)


class SplitNotMade(ValueError):
    """No procedure is in split train: the bench/train split has not been made (or left train empty)."""


@dataclass
class How2TrainReport:
    n: int = 0
    by_topic: Counter[str] = field(default_factory=Counter)
    prompt_sha256: str = ""

    def lines(self) -> list[str]:
        lines = [
            f"{self.n} How2Train procedure(s) written (inference prompt sha256 {self.prompt_sha256[:12]}…)"
        ]
        lines += [f"  {topic or '(no topic)'}: {n}" for topic, n in sorted(self.by_topic.items())]
        return lines


def inference_template() -> str:
    """The instruct generation prompt of prompts/ (what a chat model is sent to write L2)."""
    return read_prompt(PROMPTS_DIR / GENERATION_PROMPTS["inst"])


def ground_truth(procedure: Procedure) -> str:
    """What the reward needs, as the JSON string the reward API's contract gives trainers."""
    data = {
        "procedure_id": procedure.pk,
        "goal": procedure.goal,
        "resources": list(procedure.resources),
        "steps": list(procedure.steps),
    }
    return json.dumps(data, ensure_ascii=False)


def how2train_row(procedure: Procedure, *, template: str, form: RowForm) -> Row:
    prompt = generation_prompt(
        template, goal=procedure.goal, resources=procedure.resources, n=len(procedure.steps)
    )
    topic = procedure.topic.name if procedure.topic else ""
    if form == "plain":
        return {
            "procedure_id": procedure.pk,
            "source_example_id": procedure.source_example_id,
            "topic": topic,
            "goal": procedure.goal,
            "resources": list(procedure.resources),
            "steps": list(procedure.steps),
            "prompt": prompt,
        }
    return {
        "messages": [{"role": "user", "content": prompt}],
        "ground_truth": ground_truth(procedure),
        "dataset": DATASET_NAME,
        "procedure_id": procedure.pk,
        "source_example_id": procedure.source_example_id,
        "topic": topic,
    }


def how2train_export(
    *,
    path: Path,
    form: RowForm = "open-instruct",
    file_format: FileFormat = "jsonl",
    n: int | None = None,
    seed: int | None = None,
    balanced: bool = True,
    progress: Progress | None = None,
) -> How2TrainReport:
    """Write How2Train (all of split train, or a sample of n drawn with seed) to `path`."""
    how2train_check(form=form, n=n, seed=seed, balanced=balanced)
    report = How2TrainReport()
    rows = how2train_rows(form=form, n=n, seed=seed, balanced=balanced, report=report)
    columns = PLAIN_COLUMNS if form == "plain" else OPEN_INSTRUCT_COLUMNS
    report.n = rows_write(path=path, file_format=file_format, columns=columns, rows=rows, progress=progress)
    return report


def how2train_rows(
    *, form: RowForm, n: int | None, seed: int | None, balanced: bool, report: How2TrainReport | None = None
) -> Iterator[Row]:
    """The rows of an export (checked first with how2train_check); the sample is drawn on the first row."""
    template = inference_template()
    report = report or How2TrainReport()
    report.prompt_sha256 = prompt_sha256(template)
    for procedure in _procedures(n=n, seed=seed, balanced=balanced):
        report.by_topic[procedure.topic.name if procedure.topic else ""] += 1
        yield how2train_row(procedure, template=template, form=form)


def how2train_check(*, form: str, n: int | None, seed: int | None, balanced: bool = True) -> None:
    """ValueError naming the option for what cannot be exported; SplitNotMade without a train split."""
    if form not in ROW_FORMS:
        raise ValueError(f"form: {form!r} is not one of {', '.join(ROW_FORMS)}")
    if n is not None:
        SAMPLE_SIZE.check("n", n)
        if seed is None:
            raise ValueError("seed: a sample (n) needs a seed, so the same command draws the same sample")
    if seed is not None:
        SEED.check("seed", seed)
        if n is None:
            raise ValueError("seed: only with n (a sample size); without n every train procedure is written")
    train_split_check()
    if n is not None:
        _check_available(n, balanced=balanced)


def _check_available(n: int, *, balanced: bool) -> None:
    train = _train().filter(topic__isnull=False) if balanced else _train()
    available = train.count()
    if n > available:
        raise _too_many(n, available, balanced=balanced)


def _too_many(n: int, available: int, *, balanced: bool) -> ValueError:
    what = "train procedures with a topic" if balanced else "train procedures"
    return ValueError(f"n: {n} is more than the {available} {what}")


def train_split_check() -> None:
    """SplitNotMade when split train is empty (the bench/train split not made yet)."""
    if not Procedure.objects.filter(split=Split.TRAIN).exists():
        pool = Procedure.objects.filter(split=Split.POOL).count()
        raise SplitNotMade(
            "no procedure is in split train: the bench/train split has not been made "
            f"({pool} procedure(s) wait in the pool). Make it first: python manage.py make_split --seed S"
        )


def how2train_count(*, n: int | None) -> int:
    """How many rows an export will write (for a progress bar): n, or the whole split."""
    return n if n is not None else Procedure.objects.filter(split=Split.TRAIN).count()


def _train() -> QuerySet[Procedure]:
    return Procedure.objects.filter(split=Split.TRAIN).order_by("source_example_id")


def _procedures(*, n: int | None, seed: int | None, balanced: bool) -> Iterator[Procedure]:
    rows = _train().select_related("topic").defer("source_text", "url")
    if n is None:
        yield from rows.iterator(chunk_size=CHUNK)
        return
    pks = how2train_sample(n=n, seed=seed if seed is not None else 0, balanced=balanced)
    for start in range(0, len(pks), CHUNK):
        chunk = pks[start : start + CHUNK]
        found = rows.in_bulk(chunk)
        yield from (found[pk] for pk in chunk)


def how2train_sample(*, n: int, seed: int, balanced: bool) -> list[int]:
    """The pks of the sample, in source_example_id order; ValueError naming n when the split is too small."""
    by_topic: dict[str, list[int]] = {}
    order: dict[int, int] = {}
    for i, (pk, topic) in enumerate(_train().values_list("pk", "topic__name")):
        order[pk] = i
        if not balanced:
            by_topic.setdefault("", []).append(pk)
        elif topic:
            by_topic.setdefault(topic, []).append(pk)
    available = sum(len(pks) for pks in by_topic.values())
    if n > available:
        raise _too_many(n, available, balanced=balanced)
    rng = random.Random(seed)
    quotas = balanced_quotas({topic: len(pks) for topic, pks in by_topic.items()}, n)
    chosen = [pk for topic in sorted(by_topic) for pk in rng.sample(by_topic[topic], quotas[topic])]
    return sorted(chosen, key=order.__getitem__)


def balanced_quotas(sizes: dict[str, int], n: int) -> dict[str, int]:
    """An equal share of n per group (groups in name order get the remainder's extra one), a group smaller
    than its share taking all it has and the rest shared again among the others; n <= sum(sizes)."""
    quotas = dict.fromkeys(sizes, 0)
    left = n
    open_groups = sorted(group for group, size in sizes.items() if size > 0)
    while left > 0 and open_groups:
        share, extra = divmod(left, len(open_groups))
        for i, group in enumerate(open_groups):
            quotas[group] += min(share + (1 if i < extra else 0), sizes[group] - quotas[group])
        left = n - sum(quotas.values())
        open_groups = [group for group in open_groups if quotas[group] < sizes[group]]
    return quotas
