"""Models answering goal-step examples as jobs (#14, item 4): parse_choice on the shapes models answer in (and
on anything Hypothesis makes up), jobs against the loopback OpenAI-compatible server (real HTTP, run
in-process as the Celery task runs them), what is stored for each kind of answer, failed requests, resume and
retry, the candidates-only run; the accuracy table against hand-computed figures and Wilson intervals; the
API, the fragment, POST /api/jobs/ and the command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from goal_step.answer import (
    NothingToAnswer,
    answer_job_create,
    answer_job_run,
    answer_prompt,
    answer_request,
    config_for_task_model,
    parse_choice,
    task_model_for_config,
    templates_of,
)
from goal_step.job_kinds import ANSWER_TASKS
from goal_step.models import GoalStepTask, TaskAnswer, TaskExample, TaskModel, TaskSet, TaskSplit
from goal_step.results import task_models_results
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import NothingToRetry, job_retry_failed
from h2e_site.llm.config import ConfigError
from h2e_site.llm.prompts import PromptChanged, prompt_sha256
from tests.factories import make_topic
from tests.llm_server import Fail, LoopbackLLM

pytestmark = pytest.mark.django_db

SI, GI, SO = GoalStepTask.STEP_INFERENCE, GoalStepTask.GOAL_INFERENCE, GoalStepTask.STEP_ORDERING
CANDLE = ["Light the candle", "Rinse the lentils", "Tune the strings", "Wax the skis"]


# --- parse_choice -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B", 1),
        ("(B)", 1),
        ("B)", 1),
        ("B.", 1),
        ("Answer: B", 1),
        ("**B**", 1),
        ("The answer is B.", 1),
        ("The correct answer would be **(C)**", 2),
        ('{"answer": "B"}', 1),
        ('```json\n{"Answer": "(d)"}\n```', 3),
        ("b", 1),
        ("answer: c", 2),
        ("  d \n", 3),
        ("Light the candle", 0),
        ("light the candle.", 0),
        ("B) Rinse the lentils", 1),
        ("A is correct.", 0),
        ("<think>A or B? Maybe C.</think>Answer: D", 3),
        ("Option A", 0),
        # None: two letters claimed, out of range, empty, unparsable
        ("A or B", None),
        ("Answer: A or B", None),
        ("(A) and (C)", None),
        ("A) Light the candle\nB) Rinse the lentils\nC) Tune the strings\nD) Wax the skis", None),
        ("E", None),
        ("Answer: F", None),
        ('{"answer": "Z"}', None),
        ('{"answer": 2}', None),
        ("", None),
        ("   ", None),
        ("I am not sure.", None),
        ("The answer is a tricky one.", None),
        ("Rinse the candle", None),
    ],
)
def test_it_parses_the_choice(text: str, expected: int | None) -> None:
    assert parse_choice(text, 4, candidates=CANDLE) == expected


def test_it_holds_the_letters_to_the_number_of_candidates() -> None:
    assert parse_choice("B", 2) == 1
    assert parse_choice("C", 2) is None  # Step Ordering has A and B only
    assert parse_choice("The answer is C.", 2) is None
    assert parse_choice("Light the candle", 4) is None  # the text alone needs the candidates
    assert parse_choice("B", 0) is None


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(max_size=200) | st.sampled_from(["A", "(b)", '{"answer": "', "answer is", "</think>C"]),
    n=st.integers(min_value=0, max_value=26),
    candidates=st.lists(st.text(max_size=20), max_size=5),
)
def test_parse_choice_never_raises_and_stays_in_range(text: str, n: int, candidates: list[str]) -> None:
    choice = parse_choice(text, n, candidates=candidates)
    assert choice is None or 0 <= choice < n


# --- a task set ---------------------------------------------------------------------------------------------

# (task, position, prompt, candidates, answer, topic)
EXAMPLES = [
    (
        SI,
        0,
        "Cook lentils",
        ["Rinse the lentils", "Light the candle", "Tune the strings", "Wax the skis"],
        0,
        "Health",
    ),
    (
        SI,
        1,
        "Light a candle",
        ["Rinse the lentils", "Strike a match", "Tune the strings", "Wax the skis"],
        1,
        "Health",
    ),
    (
        SI,
        2,
        "Tune a guitar",
        ["Rinse the lentils", "Light the candle", "Turn the pegs", "Wax the skis"],
        2,
        "Religion",
    ),
    (GI, 0, "Strike a match", ["Cook lentils", "Tune a guitar", "Wax skis", "Light a candle"], 3, "Religion"),
    (GI, 1, "Turn the pegs", ["Tune a guitar", "Cook lentils", "Wax skis", "Light a candle"], 0, None),
    (SO, 0, "Boil an egg", ["Peel the egg", "Boil the water"], 1, "Health"),
    (SO, 1, "Make tea", ["Boil the water", "Drink the tea"], 0, "Health"),
]
RIGHT = {prompt: "ABCD"[answer] for _, _, prompt, _, answer, _ in EXAMPLES}


@pytest.fixture
def task_set(db: Any) -> TaskSet:
    return make_task_set()


def make_task_set() -> TaskSet:
    """The lentils task set of EXAMPLES (the fixture `task_set`)."""
    task_set = TaskSet.objects.create(name="lentils", seed=3)
    for task, position, prompt, candidates, answer, topic in EXAMPLES:
        TaskExample.objects.create(
            task_set=task_set,
            task=task,
            position=position,
            prompt=prompt,
            candidates=candidates,
            answer=answer,
            topic=make_topic(topic) if topic else None,
        )
    TaskExample.objects.create(  # train: never asked by a test-split job
        task_set=task_set,
        task=SI,
        position=9,
        split=TaskSplit.TRAIN,
        prompt="Wax skis",
        candidates=["Rinse the lentils", "Light the candle", "Tune the strings", "Melt the wax"],
        answer=3,
    )
    return task_set


def example(task: str, position: int) -> TaskExample:
    return TaskExample.objects.get(task=task, position=position, split=TaskSplit.TEST)


def config_file(server: LoopbackLLM, tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "loopback.yaml"
    config = {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": server.base_url,
        "max_new_tokens": 16,
        "max_concurrency": 4,
        "max_attempts": 2,
        "request_timeout_s": 10,
        "max_requests_per_minute": 100_000,
        "max_tokens_per_minute": 100_000_000,
        **extra,
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def loopback_model(server: LoopbackLLM, tmp_path: Path, **extra: Any) -> TaskModel:
    return task_model_for_config(config_file(server, tmp_path, **extra))


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def asked(body: dict[str, Any]) -> str:
    """The example's prompt (goal or step) a request is about: its "Goal:" / "Step:" line."""
    return re.search(r"^(?:Goal|Step): (.*)$", prompt_of(body), flags=re.MULTILINE).group(1)  # type: ignore[union-attr]


def answering(replies: dict[str, str]) -> Any:
    """A responder: the right letter for each example, unless `replies` says otherwise for its prompt."""
    return lambda body: replies.get(asked(body), RIGHT[asked(body)])


# --- models from configs ------------------------------------------------------------------------------------


def test_it_makes_one_model_per_config_and_prompts(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    model = loopback_model(llm_server, tmp_path)
    assert re.fullmatch(r"[0-9a-f]{12}", model.model_id)
    assert (model.model, model.backend, model.is_demo_model) == ("loopback-model", "openai", False)
    files = yaml.safe_load(model.prompt_text)  # JSON is YAML
    assert files["answer.txt"] == Path("prompts/goal_step/answer.txt").read_text(encoding="utf-8")
    assert set(files) == {"answer.txt", "answer_candidates_only.txt"}
    assert model.prompt_sha256 == prompt_sha256(model.prompt_text)
    assert "prompt_path" not in model.config

    again = loopback_model(llm_server, tmp_path, max_concurrency=1)
    assert again.pk == model.pk and again.config["max_concurrency"] == 1  # operational: same model
    assert loopback_model(llm_server, tmp_path, temperature=0.5).pk != model.pk
    assert loopback_model(llm_server, tmp_path, json_schema=True).pk != model.pk


def test_every_configured_generator_and_the_demo_model_can_answer(tmp_path: Path) -> None:
    ids = {task_model_for_config(path).model_id for path in sorted(Path("configs/generators").glob("*.yaml"))}
    assert len(ids) == len(list(Path("configs/generators").glob("*.yaml")))
    demo = task_model_for_config(Path("configs/goal_step/smollm2-local.yaml"))
    assert (demo.model, demo.backend, demo.is_demo_model) == ("SmolLM2-135M-Instruct", "local", True)
    request = answer_request(config_for_task_model(demo), key="1", prompt="...", n_candidates=4)
    assert request.grammar == 'root ::= "A" | "B" | "C" | "D"\n' and request.json_schema is None
    ordering = answer_request(config_for_task_model(demo), key="2", prompt="...", n_candidates=2)
    assert ordering.grammar == 'root ::= "A" | "B"\n'
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: m\nbackend: local\nprompt_path: prompts/judge.txt\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{bad}: prompt_path: not used for goal-step tasks"):
        task_model_for_config(bad)


def test_the_prompts_ask_each_task_s_question_over_lettered_candidates(db: Any, tmp_path: Path) -> None:
    templates = templates_of(task_model_for_config(Path("configs/goal_step/smollm2-local.yaml")))
    candidates = ["Simmer them", "Rinse the lentils"]
    ordering = answer_prompt(
        task=SO, prompt="Cook lentils", candidates=candidates, templates=templates, candidates_only=False
    )
    assert "Which of these two steps comes first in order to cook lentils?" in ordering
    assert "A) Simmer them\nB) Rinse the lentils\n" in ordering and "Answer with the letter only." in ordering
    step = answer_prompt(
        task=SI, prompt="Cook lentils", candidates=CANDLE, templates=templates, candidates_only=False
    )
    assert 'Which of these steps helps achieve the goal "Cook lentils"?' in step and "D) Wax the skis" in step
    goal = answer_prompt(
        task=GI, prompt="Strike a match", candidates=CANDLE, templates=templates, candidates_only=False
    )
    assert "Step: Strike a match" in goal and "Which goal does this step help achieve?" in goal
    alone = answer_prompt(
        task=SI, prompt="Cook lentils", candidates=CANDLE, templates=templates, candidates_only=True
    )
    assert (
        "Which of these is most likely the right answer?" in alone and "lentils" not in alone.split("A)")[0]
    )
    assert "Cook lentils" not in alone


# --- jobs ---------------------------------------------------------------------------------------------------


def test_it_answers_every_test_example_and_stores_the_choices(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering(
        {"Tune a guitar": "The answer is **B**.", "Turn the pegs": '{"answer": "A"}'}
    )
    model = loopback_model(llm_server, tmp_path)
    job = answer_job_create(task_model=model, task_set=task_set)
    expected = [example(t, p).pk for t, p in [(GI, 0), (GI, 1), (SI, 0), (SI, 1), (SI, 2), (SO, 0), (SO, 1)]]
    assert (job.kind, job.total, job.parameters["items"]) == (ANSWER_TASKS, 7, expected)
    assert (job.parameters["split"], job.parameters["candidates_only"], job.parameters["backend"]) == (
        "test",
        False,
        "openai",
    )

    job = answer_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 7, 0)
    assert len(llm_server.completion_requests) == 7
    answers = TaskAnswer.objects.filter(model=model, candidates_only=False)
    assert answers.count() == 7 and set(answers.values_list("job_id", flat=True)) == {job.pk}
    wrong = answers.get(example=example(SI, 2))
    assert (wrong.choice, wrong.raw_output, wrong.correct) == (1, "The answer is **B**.", False)
    assert answers.get(example=example(GI, 1)).choice == 0
    assert all(a.correct for a in answers.exclude(pk=wrong.pk))
    body = llm_server.completion_requests[0].body
    assert body["max_tokens"] == 16 and "response_format" not in body
    sent = {asked(r.body): prompt_of(r.body) for r in llm_server.completion_requests}
    assert (
        "Which of these two steps comes first in order to boil an egg?\nA) Peel the egg\nB) Boil"
        in sent["Boil an egg"]
    )
    assert 'Which of these steps helps achieve the goal "Cook lentils"?' in sent["Cook lentils"]
    assert "A) Cook lentils\nB) Tune a guitar\nC) Wax skis\nD) Light a candle" in sent["Strike a match"]
    with pytest.raises(NothingToAnswer):
        answer_job_create(task_model=model, task_set=task_set)


def test_the_embedded_model_is_held_to_a_letter_of_the_example_by_a_grammar(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering({})
    model = loopback_model(llm_server, tmp_path, backend="local", provider="local")
    job = answer_job_run(job_id=answer_job_create(task_model=model, task_set=task_set).pk)
    assert job is not None and (job.status, job.done) == (JobStatus.SUCCEEDED, 7)
    grammars = {asked(r.body): r.body.get("grammar") for r in llm_server.completion_requests}
    assert grammars["Cook lentils"] == 'root ::= "A" | "B" | "C" | "D"\n'
    assert grammars["Boil an egg"] == 'root ::= "A" | "B"\n'
    assert not any("response_format" in r.body for r in llm_server.completion_requests)
    assert all(a.correct for a in TaskAnswer.objects.filter(model=model))


def test_it_sends_the_prompts_the_model_stored(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    model = loopback_model(llm_server, tmp_path)
    model.prompt_text = model.prompt_text.replace("Which goal does", "STORED: which goal does")
    model.save(update_fields=["prompt_text"])
    with pytest.raises(PromptChanged, match=model.model_id):
        answer_job_create(task_model=model, task_set=task_set)  # not the text its id hashed
    model.prompt_sha256 = prompt_sha256(model.prompt_text)
    model.save(update_fields=["prompt_sha256"])
    answer_job_run(job_id=answer_job_create(task_model=model, task_set=task_set).pk)
    goal_prompts = [
        prompt_of(r.body) for r in llm_server.completion_requests if "Step: " in prompt_of(r.body)
    ]
    assert len(goal_prompts) == 2 and all("STORED: which goal does" in p for p in goal_prompts)


def test_an_unparsable_answer_is_stored_as_none_and_counted_wrong(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering({"Cook lentils": "A or B, hard to say.", "Boil an egg": "Both."})
    model = loopback_model(llm_server, tmp_path)
    job = answer_job_run(job_id=answer_job_create(task_model=model, task_set=task_set).pk)
    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 7, 0)
    unread = TaskAnswer.objects.filter(model=model, choice=None)
    assert {a.example.pk for a in unread} == {example(SI, 0).pk, example(SO, 0).pk}
    assert {a.raw_output for a in unread} == {"A or B, hard to say.", "Both."}

    (results,) = task_models_results(task_set).models
    step, goal, order = results.tasks
    assert (step.overall.correct, step.overall.n, step.overall.unparsable) == (2, 3, 1)
    assert (order.overall.correct, order.overall.n, order.overall.unparsable) == (1, 2, 1)
    assert (goal.overall.correct, goal.overall.unparsable) == (2, 0)
    assert results.unparsable == 2


def test_an_http_error_is_a_failed_item_never_an_answer_and_is_retried(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    model = loopback_model(llm_server, tmp_path, max_concurrency=1)
    llm_server.responder = answering({})
    llm_server.script(Fail(400, message="context too long"))
    job = answer_job_run(job_id=answer_job_create(task_model=model, task_set=task_set).pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 6, 1)
    assert "context too long" in job.error
    (failed,) = job.parameters["failed_items"]
    assert failed == job.parameters["items"][0]  # one at a time: the first request got the error
    assert not TaskAnswer.objects.filter(example_id=failed).exists() and TaskAnswer.objects.count() == 6
    (results,) = task_models_results(task_set).models
    goal = results.tasks[1]
    assert (goal.overall.n, goal.overall.missing, goal.overall.unparsable) == (1, 1, 0)  # missing, not wrong

    again = job_retry_failed(job=job)
    assert (again.kind, again.parameters["items"], again.parameters["retry_of"]) == (
        ANSWER_TASKS,
        [failed],
        job.pk,
    )
    again = answer_job_run(job_id=again.pk)
    assert again is not None and (again.status, again.done, again.failed) == (JobStatus.SUCCEEDED, 1, 0)
    assert TaskAnswer.objects.count() == 7
    with pytest.raises(NothingToRetry):
        job_retry_failed(job=job)  # answered since


def test_it_resumes_a_crashed_job_without_asking_anything_again(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering({})
    model = loopback_model(llm_server, tmp_path)
    job = answer_job_create(task_model=model, task_set=task_set)
    items = job.parameters["items"]
    # The crashed run: it answered two examples and lost one to an API error, then its worker died.
    started = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        started_at=started,
        done=2,
        parameters={**job.parameters, "failed_items": [items[2]]},
    )
    for pk in items[:2]:
        TaskAnswer.objects.create(model=model, example_id=pk, choice=0, raw_output="A", job=job)

    job = answer_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.total, job.done, job.failed) == (JobStatus.SUCCEEDED, 7, 6, 1)
    assert job.started_at == started
    assert len(llm_server.completion_requests) == 4
    assert items[2] not in set(TaskAnswer.objects.values_list("example_id", flat=True))
    assert answer_job_run(job_id=job.pk) == job  # finished: nothing is sent again
    assert len(llm_server.completion_requests) == 4


def test_the_candidates_only_run_is_its_own_artifact_check(
    task_set: TaskSet, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = lambda body: "A"  # the candidates alone: always the first
    model = loopback_model(llm_server, tmp_path)
    TaskAnswer.objects.create(model=model, example=example(SI, 0), choice=0)  # a full-prompt answer
    job = answer_job_create(task_model=model, task_set=task_set, candidates_only=True)
    assert job.total == 7 and job.parameters["candidates_only"] is True  # its own answers: all 7 to do
    job = answer_job_run(job_id=job.pk)
    assert job is not None and (job.status, job.done) == (JobStatus.SUCCEEDED, 7)
    prompts = [prompt_of(r.body) for r in llm_server.completion_requests]
    assert all(p.startswith("Which of these is most likely the right answer?") for p in prompts)
    assert not any("Goal:" in p or "Step:" in p or "Boil an egg" in p for p in prompts)  # no prompt shown
    assert (
        "Which of these is most likely the right answer?\nA) Peel the egg\nB) Boil the water\n\n"
        "Answer with the letter only.\nAnswer:"
    ) in prompts
    assert TaskAnswer.objects.filter(model=model, candidates_only=True).count() == 7
    assert TaskAnswer.objects.filter(model=model, candidates_only=False).count() == 1

    (results,) = task_models_results(task_set).models
    step, goal, order = results.tasks
    # "A" is right on SI 0 (of 3), GI 1 (of 2), SO 1 (of 2).
    assert (step.candidates_only.correct, step.candidates_only.n, step.candidates_only.chance) == (1, 3, 0.25)
    assert (goal.candidates_only.correct, goal.candidates_only.n) == (1, 2)
    assert (order.candidates_only.correct, order.candidates_only.n, order.candidates_only.chance) == (
        1,
        2,
        0.5,
    )
    assert step.candidates_only.at_chance and order.candidates_only.at_chance
    assert (step.overall.correct, step.overall.n, step.overall.missing) == (1, 1, 2)
    assert goal.overall.n == 0 and goal.overall.share is None


# --- the accuracy table -------------------------------------------------------------------------------------

CRAFTED = {  # (task, position): choice (None: unparsable); GI 1 is left out (missing)
    (SI, 0): 0,  # right   Health
    (SI, 1): 2,  # wrong   Health
    (SI, 2): 2,  # right   Religion
    (GI, 0): None,  # unparsable  Religion
    (SO, 0): 1,  # right   Health
    (SO, 1): 0,  # right   Health
}
