"""Training data out (#32 item 6): How2Train as open-instruct / plain rows and a judge's verdicts as chat SFT
rows, each as JSONL and Parquet, read back and compared with what the database holds and with the prompts
the studio's own jobs send."""

from __future__ import annotations

import json
from collections import Counter
from io import StringIO
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from judging.generate_jobs import GenerateWork, generate_job_create
from judging.how2train import balanced_quotas, how2train_sample
from judging.judge_jobs import JudgeWork, judge_job_create
from judging.models import Judge
from mining.models import Procedure, Split
from tests.factories import make_generation, make_judge, make_judgment, make_procedure
from tests.judging.runnable import make_runnable_generator, make_runnable_judge

pytestmark = pytest.mark.django_db

TRICKY = 'Fix a "stuck" zip — café au lait 🏔\nsecond line \\ back\tslash'
CONTRACT_KEYS = {"procedure_id", "goal", "resources", "steps"}


def read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def export(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, verbosity=0)
    return out.getvalue()


@pytest.fixture
def world() -> dict[str, Procedure]:
    """Train procedures in two topics (one with tricky text), one without a topic, and bench / pool ones."""
    return {
        "tricky": make_procedure(
            goal=TRICKY,
            steps=['Open the "slider".', "Rub graphite\non the teeth.", "Zip ✓"],
            resources=['pencil "HB"', "zip"],
            split=Split.TRAIN,
            source_example_id="t-1",
        ),
        "crane": make_procedure(
            goal="Fold a crane",
            steps=["Fold.", "Crease.", "Pull the wings.", "Shape the head."],
            resources=[],
            topic="Art & Design",
            split=Split.TRAIN,
            source_example_id="t-2",
        ),
        "untopical": make_procedure(
            goal="Untopical", steps=["One.", "Two."], topic=None, split=Split.TRAIN, source_example_id="t-3"
        ),
        "bench": make_procedure(goal="A bench goal", split=Split.BENCH, source_example_id="b-1"),
        "pool": make_procedure(goal="A near-duplicate", split=Split.POOL, source_example_id="p-1"),
    }


def studio_inference_prompt(procedure: Procedure) -> str:
    """The prompt the studio's generate job sends an instruct generator for this procedure."""
    generator = make_runnable_generator(model="loopback/inst-model")
    job = generate_job_create(generator=generator, procedure_ids=[procedure.pk], split=None, enqueue=False)
    return GenerateWork(job).request(procedure.pk, procedure).prompt


# --- How2Train ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_it_exports_train_in_open_instructs_columns(world: dict, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"how2train.{suffix}"
    export("export_how2train", "--out", str(out))
    rows = read_rows(out)
    train = Procedure.objects.filter(split=Split.TRAIN).select_related("topic").order_by("source_example_id")
    assert [row["procedure_id"] for row in rows] == [p.pk for p in train]
    for row, procedure in zip(rows, train, strict=True):
        assert row == {
            "messages": [{"role": "user", "content": studio_inference_prompt(procedure)}],
            "ground_truth": row["ground_truth"],
            "dataset": "how2score",
            "procedure_id": procedure.pk,
            "source_example_id": procedure.source_example_id,
            "topic": procedure.topic.name if procedure.topic else "",
        }
        truth = json.loads(row["ground_truth"])
        assert set(truth) == CONTRACT_KEYS
        assert truth == {
            "procedure_id": procedure.pk,
            "goal": procedure.goal,
            "resources": procedure.resources,
            "steps": procedure.steps,
        }


def test_it_keeps_quotes_newlines_and_unicode_the_same_in_both_files(world: dict, tmp_path: Path) -> None:
    export("export_how2train", "--out", str(tmp_path / "a.jsonl"))
    export("export_how2train", "--out", str(tmp_path / "a.parquet"))
    jsonl, parquet = read_rows(tmp_path / "a.jsonl"), read_rows(tmp_path / "a.parquet")
    assert jsonl == parquet
    tricky = next(row for row in jsonl if row["procedure_id"] == world["tricky"].pk)
    assert json.loads(tricky["ground_truth"])["goal"] == TRICKY
    assert f"Goal:\n{TRICKY}\n" in tricky["messages"][0]["content"]
    assert '["pencil \\"HB\\"", "zip"]' in tricky["messages"][0]["content"]  # resources as a JSON list
    assert "🏔" in (tmp_path / "a.jsonl").read_text(encoding="utf-8")  # written as text, not \\u escapes


def test_it_asks_for_as_many_steps_as_the_reference_has(world: dict, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    export("export_how2train", "--out", str(out))
    crane = next(row for row in read_rows(out) if row["procedure_id"] == world["crane"].pk)
    assert crane["messages"][0]["content"].endswith(
        "\n\n4 steps to achieve the goal using the given resources:\n"
    )
    assert "return exactly 4 steps" in crane["messages"][0]["content"]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_it_exports_plain_rows(world: dict, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"plain.{suffix}"
    export("export_how2train", "--out", str(out), "--form", "plain")
    crane = world["crane"]
    row = next(row for row in read_rows(out) if row["procedure_id"] == crane.pk)
    assert row == {
        "procedure_id": crane.pk,
        "source_example_id": "t-2",
        "topic": "Art & Design",
        "goal": "Fold a crane",
        "resources": [],
        "steps": ["Fold.", "Crease.", "Pull the wings.", "Shape the head."],
        "prompt": studio_inference_prompt(crane),
    }


def test_it_never_exports_bench_or_pool_procedures(world: dict, tmp_path: Path) -> None:
    for i in range(30):
        make_procedure(goal=f"bench {i}", topic="Health", split=Split.BENCH)
    out = tmp_path / "t.parquet"
    export("export_how2train", "--out", str(out), "--n", "2", "--seed", "3", "--unbalanced")
    export("export_how2train", "--out", str(tmp_path / "all.jsonl"))
    exported = {row["procedure_id"] for row in read_rows(out) + read_rows(tmp_path / "all.jsonl")}
    not_train = set(Procedure.objects.exclude(split=Split.TRAIN).values_list("pk", flat=True))
    assert exported and not exported & not_train
    assert {json.loads(row["ground_truth"])["goal"] for row in read_rows(tmp_path / "all.jsonl")} == {
        TRICKY,
        "Fold a crane",
        "Untopical",
    }


def test_it_refuses_without_a_split(tmp_path: Path) -> None:
    make_procedure(split=Split.BENCH)
    make_procedure(split=Split.POOL)
    out = tmp_path / "t.jsonl"
    with pytest.raises(
        CommandError, match=r"split has not been made \(1 procedure\(s\) wait in the pool\).*make_split"
    ):
        export("export_how2train", "--out", str(out))
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--n", "0", "--seed", "1"], r"^--n: 0 is not a number from 1 to"),
        (["--n", "5"], r"^--seed: a sample \(n\) needs a seed"),
        (["--seed", "5"], r"^--seed: only with n"),
        (["--n", "2", "--seed", "-1"], r"^--seed: -1 is not a number from 0 to"),
        (["--n", "3", "--seed", "1"], r"^--n: 3 is more than the 2 train procedures with a topic"),
        (["--n", "4", "--seed", "1", "--unbalanced"], r"^--n: 4 is more than the 3 train procedures$"),
        (["--unbalanced"], r"^--unbalanced: only with --n"),
        (["--format", "csv"], r"argument --format: invalid choice: 'csv'"),
        (["--form", "verl"], r"argument --form: invalid choice: 'verl'"),
    ],
)
def test_it_refuses_bad_options_naming_the_option(
    world: dict, tmp_path: Path, options: list[str], message: str
) -> None:
    out = tmp_path / "t.jsonl"
    with pytest.raises(CommandError, match=message):
        export("export_how2train", "--out", str(out), *options)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_it_draws_a_balanced_sample_the_seed_repeats(tmp_path: Path) -> None:
    for topic, size in [("Health", 10), ("Religion", 1), ("Sports", 10)]:
        for i in range(size):
            make_procedure(goal=f"{topic} {i}", topic=topic, split=Split.TRAIN)
    out = tmp_path / "s.jsonl"
    report = export("export_how2train", "--out", str(out), "--n", "6", "--seed", "7")
    rows = read_rows(out)
    assert Counter(row["topic"] for row in rows) == {"Health": 3, "Religion": 1, "Sports": 2}
    assert "Health: 3" in report and "6 How2Train procedure(s) written" in report
    ids = [row["source_example_id"] for row in rows]
    assert ids == sorted(ids)
    again = tmp_path / "again.jsonl"
    export("export_how2train", "--out", str(again), "--n", "6", "--seed", "7")
    assert read_rows(again) == rows
    samples = {tuple(how2train_sample(n=6, seed=seed, balanced=True)) for seed in range(5)}
    assert len(samples) > 1  # the seed does choose


def test_balanced_quotas_by_hand() -> None:
    # 100 over 14 topics of plenty: 7 each, the first two (name order) 8.
    plenty = {f"t{i:02d}": 1000 for i in range(14)}
    quotas = balanced_quotas(plenty, 100)
    assert sum(quotas.values()) == 100 and quotas["t00"] == quotas["t01"] == 8 and quotas["t13"] == 7
    # share 3 each; b has 1, c has 2: the 3 left go to a and d (2 and 1).
    assert balanced_quotas({"a": 50, "b": 1, "c": 2, "d": 50}, 12) == {"a": 5, "b": 1, "c": 2, "d": 4}
    assert balanced_quotas({"a": 2, "b": 3}, 5) == {"a": 2, "b": 3}


# --- judge SFT ----------------------------------------------------------------------------------------


@pytest.fixture
def judged(world: dict) -> dict[str, Any]:
    judge = make_runnable_judge(model="loopback/big-judge")
    other = make_judge()
    tricky = make_generation(
        procedure=world["tricky"], predicted_steps=["  Open it. ", "", 'Rub "graphite"\nhard.']
    )
    bench = make_generation(procedure=world["bench"])
    crane = make_generation(procedure=world["crane"])
    return {
        "judge": judge,
        "failed": make_judgment(
            generation=tricky,
            judge=judge,
            reasoning='L2 skips the "slider" — ✗\nsee step 2',
            failures=[("Never zips it 🏔", [3], [2]), ('Says "hard"', [2], [])],
        ),
        "clean": make_judgment(generation=bench, judge=judge, reasoning="Fine."),
        "parse_failed": make_judgment(generation=crane, judge=judge, parse_failed=True, reasoning=""),
        "other": make_judgment(generation=crane, judge=other),
    }


def studio_judge_prompt(judge: Judge, generation_pk: int) -> str:
    """The prompt the studio's judge job sends this judge for this generation."""
    job = judge_job_create(judge=judge, generation_ids=[generation_pk], mode="replace", enqueue=False)
    work = JudgeWork(job)
    return work.request(generation_pk, work.rows([generation_pk])[generation_pk]).prompt


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_it_exports_a_judges_parsed_verdicts_as_chat_sft(judged: dict, tmp_path: Path, suffix: str) -> None:
    judge, failed, clean = judged["judge"], judged["failed"], judged["clean"]
    out = tmp_path / f"sft.{suffix}"
    report = export("export_judge_sft", "--judge", judge.judge_id, "--out", str(out))
    assert "2 judgment(s)" in report and "1 parse failure(s) left out" in report
    rows = read_rows(out)
    assert [row["judgment_id"] for row in rows] == [failed.pk, clean.pk]
    row = rows[0]
    assert row["messages"][0] == {"role": "user", "content": studio_judge_prompt(judge, failed.generation_id)}
    assert row["messages"][1]["role"] == "assistant"
    assert json.loads(row["messages"][1]["content"]) == {
        "reasoning": 'L2 skips the "slider" — ✗\nsee step 2',
        "critical_failures": [
            {"failure": "Never zips it 🏔", "L1_steps": [3], "L2_steps": [2]},
            {"failure": 'Says "hard"', "L1_steps": [2], "L2_steps": []},
        ],
    }
    assert {k: v for k, v in row.items() if k != "messages"} == {
        "judge_id": judge.judge_id,
        "judgment_id": failed.pk,
        "generation_id": failed.generation_id,
        "generator_id": failed.generation.generator.generator_id,
        "procedure_id": failed.procedure_id,
        "topic": "Home & Hobbies",
        "has_failure": True,
    }
    assert json.loads(rows[1]["messages"][1]["content"]) == {"reasoning": "Fine.", "critical_failures": []}
    assert rows[1]["has_failure"] is False


def test_it_keeps_only_train_procedures_when_asked(judged: dict, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    export("export_judge_sft", "--judge", judged["judge"].judge_id, "--out", str(out), "--split", "train")
    rows = read_rows(out)
    assert [row["judgment_id"] for row in rows] == [judged["failed"].pk]
    assert Procedure.objects.get(pk=rows[0]["procedure_id"]).split == Split.TRAIN


def test_it_refuses_train_only_without_a_split(tmp_path: Path) -> None:
    judgment = make_judgment(judge=make_runnable_judge())
    with pytest.raises(CommandError, match=r"^--split: no procedure is in split train"):
        export(
            "export_judge_sft",
            "--judge",
            judgment.judge.judge_id,
            "--out",
            str(tmp_path / "s.jsonl"),
            "--split",
            "train",
        )


def test_it_refuses_an_unknown_judge_or_one_without_its_prompt(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    with pytest.raises(CommandError, match=r"^--judge: no judge 'nope'"):
        export("export_judge_sft", "--judge", "nope", "--out", str(out))
    imported = make_judgment().judge  # imported: no config, no prompt text
    with pytest.raises(CommandError, match=r"^--judge: judge .*: config: this row was imported"):
        export("export_judge_sft", "--judge", imported.judge_id, "--out", str(out))
    with pytest.raises(CommandError, match=r"argument --split: invalid choice: 'test'"):
        export("export_judge_sft", "--judge", imported.judge_id, "--out", str(out), "--split", "test")
    assert not list(tmp_path.iterdir())


# --- downloads (staff) --------------------------------------------------------------------------------


def jsonl_body(response: Any) -> list[dict[str, Any]]:
    body = b"".join(response.streaming_content).decode("utf-8")
    return [json.loads(line) for line in body.splitlines()]


def test_it_downloads_the_same_how2train_rows_as_the_command(
    world: dict, staff: Client, tmp_path: Path
) -> None:
    for query, options in [
        ("", []),
        ("?form=plain", ["--form", "plain"]),
        ("?n=1&seed=4", ["--n", "1", "--seed", "4"]),
    ]:
        response = staff.get(reverse("judging:how2train_jsonl") + query)
        assert response.status_code == 200
        assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
        out = tmp_path / "t.jsonl"
        export("export_how2train", "--out", str(out), *options)
        assert jsonl_body(response) == read_rows(out)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?n=abc", "n: Enter a whole number."),
        ("?n=0&seed=1", "n: Ensure this value is greater than or equal to 1."),
        ("?form=verl", "form: Select a valid choice. verl is not one of the available choices."),
        ("?n=2", "seed: a sample (n) needs a seed"),
        ("?n=9&seed=1", "n: 9 is more than the 2 train procedures with a topic"),
    ],
)
def test_it_refuses_a_bad_download_option_naming_it(
    world: dict, staff: Client, query: str, message: str
) -> None:
    response = staff.get(reverse("judging:how2train_jsonl") + query)
    assert response.status_code == 400
    assert response.content.decode().startswith(message)


def test_it_answers_409_for_how2train_before_the_split(staff: Client) -> None:
    make_procedure(split=Split.POOL)
    response = staff.get(reverse("judging:how2train_jsonl"))
    assert response.status_code == 409 and "make_split" in response.content.decode()


def test_it_downloads_a_judges_sft_rows(judged: dict, staff: Client, tmp_path: Path) -> None:
    judge = judged["judge"]
    out = tmp_path / "s.jsonl"
    export("export_judge_sft", "--judge", judge.judge_id, "--out", str(out), "--split", "train")
    response = staff.get(reverse("judging:judge_sft_jsonl", args=[judge.judge_id]) + "?split=train")
    assert response.status_code == 200 and jsonl_body(response) == read_rows(out)
    bad = staff.get(reverse("judging:judge_sft_jsonl", args=[judge.judge_id]) + "?split=test")
    assert bad.status_code == 400 and bad.content.decode().startswith("split: Select a valid choice.")
    assert staff.get(reverse("judging:judge_sft_jsonl", args=["nope"])).status_code == 404
    imported = make_judgment().judge
    refused = staff.get(reverse("judging:judge_sft_jsonl", args=[imported.judge_id]))
    assert refused.status_code == 409 and "this row was imported" in refused.content.decode()


def test_the_downloads_need_staff_and_get(
    judged: dict, client: Client, user_client: Client, staff: Client
) -> None:
    urls = [
        reverse("judging:how2train_jsonl"),
        reverse("judging:judge_sft_jsonl", args=[judged["judge"].judge_id]),
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # to the login page
        assert user_client.get(url).status_code == 403
        assert staff.post(url).status_code == 405


def test_the_mining_page_and_the_report_card_link_the_downloads(judged: dict, staff: Client) -> None:
    page = staff.get(reverse("mine:runs")).content.decode()
    assert "3 in train" in page and reverse("judging:how2train_jsonl") + "?form=plain" in page
    card = staff.get(reverse("judges:report_card", args=[judged["judge"].judge_id])).content.decode()
    assert reverse("judging:judge_sft_jsonl", args=[judged["judge"].judge_id]) in card


def test_the_mining_page_says_the_split_is_not_made(staff: Client) -> None:
    make_procedure(split=Split.POOL)
    page = staff.get(reverse("mine:runs")).content.decode()
    assert "0 in train, 1 in the pool" in page and "the bench/train split has not been made" in page
    assert reverse("judging:how2train_jsonl") not in page
