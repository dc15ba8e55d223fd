"""A judge's verdicts out as chat SFT data, for distilling a judge (paper §4.3: How2Judge is an 8B model
trained on a larger judge's outputs).

One row per parsed Judgment of the chosen judge (a parse failure has no verdict to learn from):
`messages` = [user: the judge prompt exactly as the studio's judge jobs build it (judging/prompting.py
`judge_prompt` with the judge's own prompt text, the goal, L1 and L2 as cleaned steps), assistant: the
verdict as the judge output of §H.3, `{"reasoning": ..., "critical_failures": [{"failure", "L1_steps",
"L2_steps"}, ...]}` as JSON], beside `judge_id`, `judgment_id`, `generation_id`, `generator_id`,
`procedure_id`, `topic` and `has_failure`. The assistant message is rebuilt from what the studio parsed and
stored (the reasoning and the critical failures in the judge's order), not the raw output, so it is valid JSON
in one shape even when the judge wrapped its answer in prose or a code fence. Optionally only procedures of
one split (train, to keep the benchmark out of the distillation data).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mining.models import Split

from .configs import prompt_for_judge
from .dataset_files import CHUNK, Columns, FileFormat, Progress, Row, rows_write
from .how2train import train_split_check
from .models import Judge, Judgment, JudgmentQuerySet
from .prompting import clean_steps, judge_prompt

SFT_COLUMNS: Columns = (
    ("messages", "messages"),
    ("judge_id", "string"),
    ("judgment_id", "int64"),
    ("generation_id", "int64"),
    ("generator_id", "string"),
    ("procedure_id", "int64"),
    ("topic", "string"),
    ("has_failure", "bool"),
)


@dataclass
class JudgeSftReport:
    n: int = 0
    n_parse_failed: int = 0  # the judge's parse failures left out


def judge_output(judgment: Judgment) -> str:
    """The verdict as the judge's JSON output (§H.3), from the stored reasoning and critical failures."""
    failures = [
        {"failure": failure.description, "L1_steps": failure.l1_steps, "L2_steps": failure.l2_steps}
        for failure in judgment.failures.all()
    ]
    return json.dumps({"reasoning": judgment.reasoning, "critical_failures": failures}, ensure_ascii=False)


def judge_sft_row(judgment: Judgment, *, template: str) -> Row:
    generation = judgment.generation
    procedure = generation.procedure
    prompt = judge_prompt(
        template,
        goal=procedure.goal,
        reference_steps=clean_steps(procedure.steps),
        steps=clean_steps(generation.predicted_steps),
    )
    return {
        "messages": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": judge_output(judgment)},
        ],
        "judge_id": judgment.judge.judge_id,
        "judgment_id": judgment.pk,
        "generation_id": generation.pk,
        "generator_id": generation.generator.generator_id,
        "procedure_id": procedure.pk,
        "topic": procedure.topic.name if procedure.topic else "",
        "has_failure": judgment.has_failure,
    }


def judge_sft_judgments(*, judge: Judge, split: str | None = None) -> JudgmentQuerySet:
    """The judge's parsed judgments (of procedures in `split`, when given), in generation order."""
    if split is not None and split not in Split.values:
        raise ValueError(f"split: {split!r} is not one of {', '.join(Split.values)}")
    if split == Split.TRAIN:
        train_split_check()
    judgments = Judgment.objects.filter(judge=judge, parse_failed=False)
    if split is not None:
        judgments = judgments.filter(procedure__split=split)
    return judgments.order_by("generation_id")


def judge_sft_export(
    *,
    path: Path,
    judge: Judge,
    split: str | None = None,
    file_format: FileFormat = "jsonl",
    progress: Progress | None = None,
) -> JudgeSftReport:
    """Write the judge's parsed judgments as chat SFT rows to `path`. The judge's prompt is checked first
    (PromptChanged / ConfigError, ValueErrors naming the judge, when it cannot be had)."""
    template = prompt_for_judge(judge)
    judgments = judge_sft_judgments(judge=judge, split=split)
    report = JudgeSftReport()
    parse_failed = Judgment.objects.filter(judge=judge, parse_failed=True)
    if split is not None:
        parse_failed = parse_failed.filter(procedure__split=split)
    report.n_parse_failed = parse_failed.count()
    report.n = rows_write(
        path=path,
        file_format=file_format,
        columns=SFT_COLUMNS,
        rows=judge_sft_rows(judgments, template=template),
        progress=progress,
    )
    return report


def judge_sft_rows(judgments: JudgmentQuerySet, *, template: str) -> Iterator[Row]:
    """The rows of `judgments` (judge_sft_judgments) with the judge prompt `template` (prompt_for_judge)."""
    rows = (
        judgments.select_related("judge", "generation__generator", "generation__procedure__topic")
        .defer("raw_output", "generation__model_completion", "generation__procedure__source_text")
        .with_failures()
    )
    for judgment in rows.iterator(chunk_size=CHUNK):
        yield judge_sft_row(judgment, template=template)
