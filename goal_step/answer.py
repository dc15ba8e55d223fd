"""Models answering goal-step examples, as jobs (issue #14, item 4): any configured model (a generator config,
configs/generators/*.yaml, or configs/goal_step/*.yaml) chooses one candidate of each example of a task set's
split, one request per example; h2e_site.jobs runs the loop, this says what to send and how to store it.

- A TaskModel is a model config plus the two prompt files of prompts/goal_step/: answer.txt (one template per
  task, each under a "### <task>" line: the task's question and the candidates lettered A), B), ...) and
  answer_candidates_only.txt (the candidates alone: the model's own artifact check, paper §3.1). Its model_id
  hashes the config's identity fields (backend, provider, model, decoding, prompt style, how the output is
  constrained) and both files' text; the row keeps the files' text as it hashed them (`prompt_text`, a JSON
  object file name -> text) and its jobs send that text, never whatever the files say when a worker runs.
  `prompt_path` is refused in these configs (a generator's would name its generation prompt).
- Items: the TaskExample pks of the set's split (by task and position) the model has no answer for in this
  mode (full prompt, or candidates only); fixed when the job is created.
- The embedded model is held to one letter by a grammar; a config with json_schema to {"answer": "<letter>"};
  others answer freely and parse_choice reads the text.
- An answer is upserted as the TaskAnswer of (model, example, candidates_only): choice None when it cannot be
  read (counted wrong and shown apart by results.py; the raw output is kept either way). An API or connection
  error is a failed item of the job (its example pk in parameters["failed_items"]), never an answer; "Retry
  failed items" starts a job over those still without one.
- Resumable: an answer in the job's mode counts as done, a failed item of this job as failed; the rest is
  sent. h2e_site.jobs.answering owns pending and failed items, retry, cost and latency; this module says
  which examples, what to ask and what to store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from h2e_site.jobs import answering
from h2e_site.jobs.answer_kinds import AnswerKind, ConfiguredWork, hashed_model_id
from h2e_site.jobs.models import Job
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult
from h2e_site.llm.config import ModelConfig
from h2e_site.llm.json_output import find_json_object

from .job_kinds import ANSWER_TASKS
from .models import GoalStepTask, TaskAnswer, TaskExample, TaskModel, TaskSet, TaskSplit
from .options import LETTERS

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "ANSWER_PROMPT",
    "CANDIDATES_ONLY_PROMPT",
    "MODEL_ID_VERSION",
    "AnswerWork",
    "NothingToAnswer",
    "PromptTemplates",
    "answer_job_create",
    "answer_job_retry",
    "answer_job_run",
    "answer_prompt",
    "answer_request",
    "config_for_task_model",
    "configs_dir",
    "letter_grammar",
    "lettered",
    "parse_choice",
    "task_model_config",
    "task_model_for_config",
    "task_model_for_model_config",
    "task_model_id_of",
    "templates_of",
]

MODEL_ID_VERSION = "h2e_studio.goal_step_model_id.v1"
PROMPTS_DIR = Path(settings.BASE_DIR) / "prompts" / "goal_step"
ANSWER_PROMPT = "answer.txt"
CANDIDATES_ONLY_PROMPT = "answer_candidates_only.txt"
_SECTION = re.compile(r"^### (\w+)[ \t]*$", re.MULTILINE)


class NothingToAnswer(answering.NothingToAsk):
    """Every example of the set's split has this model's answer in this mode already (or there is none)."""


# --- prompts ------------------------------------------------------------------------------------------------


class PromptTemplates:
    """The templates a TaskModel sends: one per task (answer.txt's sections) and the candidates-only one."""

    def __init__(self, files: dict[str, str], *, label: str = "goal-step prompts") -> None:
        if set(files) != {ANSWER_PROMPT, CANDIDATES_ONLY_PROMPT}:
            raise ValueError(f"{label}: the prompts are {ANSWER_PROMPT} and {CANDIDATES_ONLY_PROMPT}")
        self.by_task = _sections(files[ANSWER_PROMPT], label=f"{label}: {ANSWER_PROMPT}")
        self.candidates_only = files[CANDIDATES_ONLY_PROMPT].rstrip("\n")

    def template(self, task: str, *, candidates_only: bool) -> str:
        return self.candidates_only if candidates_only else self.by_task[task]


def _sections(text: str, *, label: str) -> dict[str, str]:
    """answer.txt as {task: template}: each task's text follows its "### <task>" line."""
    parts = _SECTION.split(text)
    if parts[0].strip():
        raise ValueError(f"{label}: text before the first '### <task>' line")
    sections = {name: body.strip("\n") for name, body in zip(parts[1::2], parts[2::2], strict=True)}
    if sorted(sections) != sorted(GoalStepTask.values) or len(parts[1::2]) != len(GoalStepTask.values):
        raise ValueError(f"{label}: one section per task expected ({', '.join(GoalStepTask.values)})")
    return sections


def prompt_files() -> dict[str, str]:
    """The two prompt files' text as they are now."""
    return {
        name: (PROMPTS_DIR / name).read_text(encoding="utf-8")
        for name in (ANSWER_PROMPT, CANDIDATES_ONLY_PROMPT)
    }


def lettered(candidates: Sequence[str]) -> str:
    """The candidates as "A) text" lines."""
    if not 2 <= len(candidates) <= len(LETTERS):
        raise ValueError(f"an example has 2 to {len(LETTERS)} candidates, not {len(candidates)}")
    return "\n".join(f"{LETTERS[i]}) {str(text).strip()}" for i, text in enumerate(candidates))


def _lower_first(text: str) -> str:
    """A goal inside a sentence ("... in order to cook lentils?"): its first letter lowered, unless the first
    word is an acronym or a name written in capitals ("DIY", "iPhone" stays)."""
    text = text.strip().rstrip(".?!")
    first = text.split(" ", 1)[0]
    if len(first) > 1 and not first[1:].islower():
        return text
    return text[:1].lower() + text[1:]


def answer_prompt(
    *, task: str, prompt: str, candidates: Sequence[str], templates: PromptTemplates, candidates_only: bool
) -> str:
    """The text sent for one example: the task's question over the lettered candidates, or the candidates
    alone."""
    template = templates.template(task, candidates_only=candidates_only)
    return template.format(
        prompt=prompt.strip(), prompt_lower=_lower_first(prompt), candidates=lettered(candidates)
    )


# --- answers ------------------------------------------------------------------------------------------------

_MARKUP = re.compile('[*_`#>"\u201c\u201d\u2018\u2019]')
_BRACKETS = re.compile(r"[\[\](){}]")
_LETTER = r"[(\[]?([A-Za-z])[)\]]?"
_MARKER = re.compile(
    r"\b(?:answer|option|choice|letter)\s*(?:is|would\s+be|should\s+be|[:=-])?\s*(?:option|choice|letter)?\s*"
    + _LETTER
    + r"(?![A-Za-z0-9])"
    + r"(?:\s*(?:or|and|/|,|&)\s*"
    + _LETTER
    + r"(?![A-Za-z0-9]))?",
    re.IGNORECASE,
)
_CORRECT = re.compile(
    r"(?<![A-Za-z0-9])[(\[]?([A-Z])[)\]]?\s+is\s+(?:the\s+)?(?:correct|right|best|answer)\b"
)
# A letter written as a label: "(B)" anywhere, "B)" / "B." / "B:" at the start of a line.
_LABEL = re.compile(r"\(([A-Za-z])\)|^[ \t]*([A-Za-z])[).:](?=\s|$)", re.MULTILINE)
_SPACE = re.compile(r"\s+")


def parse_choice(text: str, n_candidates: int, *, candidates: Sequence[str] = ()) -> int | None:
    """The candidate a model chose (0-based), or None when it cannot be told. After dropping anything up to a
    </think>, in order, the first rule that finds something decides:
    1. a JSON object with an "answer" key: its value read as a letter ("B", "(B)", "B) ...");
    2. the whole text is one letter, markup and brackets aside ("B", "(B)", "B)", "**B**", "b.");
    3. "answer is B", "Answer: B", "option B" (a lower-case letter only when no word follows it);
       "B is correct";
    4. the whole text is one candidate's text (case, markup and a final full stop aside);
    5. letters written as labels: "(B)" anywhere, "B) ..." / "B." / "B:" opening a line.
    None when the rule that decides finds two different letters ("A or B", a listing of the candidates), a
    letter past the last candidate, or nothing at all (empty or unparsable text)."""
    if n_candidates < 1:
        return None
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    if not text.strip():
        return None
    found, choice = _json_choice(text, n_candidates, candidates)
    if found:
        return choice
    return _plain_choice(text, n_candidates, candidates)


def _plain_choice(text: str, n: int, candidates: Sequence[str]) -> int | None:
    plain = _MARKUP.sub(" ", text).strip()
    bare = _BRACKETS.sub(" ", plain).strip().rstrip(".!:").strip()
    if len(bare) == 1 and bare.isalpha():
        return _index({bare}, n)
    claimed: set[str] = set()
    for match in _MARKER.finditer(plain):
        first, second = match.group(1), match.group(2)
        if first.islower() and re.match(r"\s+[a-z]", plain[match.end(1) :]):
            continue  # "the answer is a good one": an article, not a letter
        claimed.add(first)
        if second and not (second.islower() and re.match(r"\s+[a-z]", plain[match.end(2) :])):
            claimed.add(second)
    claimed.update(_CORRECT.findall(plain))
    if claimed:
        return _index(claimed, n)
    if candidates:
        wanted = _normalised(text)
        matching = {i for i, candidate in enumerate(candidates[:n]) if _normalised(candidate) == wanted}
        if matching:
            return matching.pop() if len(matching) == 1 else None
    labels = {a or b for a, b in _LABEL.findall(plain)}
    return _index(labels, n) if labels else None


def _index(letters: set[str], n: int) -> int | None:
    """The index of the one letter claimed; None for two different ones or one past the last candidate."""
    upper = {letter.upper() for letter in letters}
    if len(upper) != 1:
        return None
    index = LETTERS.find(upper.pop())
    return index if 0 <= index < n else None


def _normalised(text: str) -> str:
    return _SPACE.sub(" ", _MARKUP.sub(" ", text)).strip().rstrip(".!").strip().casefold()


def _json_choice(text: str, n: int, candidates: Sequence[str]) -> tuple[bool, int | None]:
    """(found, choice) for the JSON object of the text with an "answer" key (any case)."""
    if "{" not in text:
        return False, None
    obj = find_json_object(text, required_key="answer")
    key = next((k for k in obj if isinstance(k, str) and k.lower() == "answer"), None) if obj else None
    if obj is None or key is None:
        return False, None
    value = obj[key]
    if not isinstance(value, str) or not value.strip() or "{" in value:
        return True, None
    return True, _plain_choice(value, n, candidates)


def letter_grammar(n_candidates: int) -> str:
    """GBNF for exactly one of the first n letters (the embedded model's answer)."""
    return "root ::= " + " | ".join(f'"{LETTERS[i]}"' for i in range(n_candidates)) + "\n"


def letter_schema(n_candidates: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LETTERS[:n_candidates])}},
        "required": ["answer"],
        "additionalProperties": False,
    }


# --- configs and models -------------------------------------------------------------------------------------


def configs_dir() -> Path:
    """configs/goal_step/: models offered for answering the tasks (configs/generators/*.yaml work too)."""
    return Path(settings.BASE_DIR) / "configs" / "goal_step"


def task_model_config(config_path: Path | str) -> ModelConfig:
    """A generator config (any prompt style, the same fields) without prompt_path, since the prompts are
    always prompts/goal_step/*.txt. ConfigError naming the file and field."""
    prompts = f"prompts/{PROMPTS_DIR.name}/*.txt"
    return answering.config_without_prompt_path(
        config_path, role="generator", used_for="goal-step tasks", prompts=prompts
    )


def task_model_id_of(config: ModelConfig, prompt_text: str) -> str:
    """h2e_site.llm.config.hashed_id over the model's identity (with its prompt style and the output
    constraint) and the SHA-256 of each prompt file."""
    output = answering.output_constraint(config, "letter")
    return hashed_model_id(
        config, prompt_text, name="model", version=MODEL_ID_VERSION, output=output, with_prompt_style=True
    )


def task_model_for_config(config_path: Path | str) -> TaskModel:
    """The TaskModel of a config file: found by model_id, created on first use."""
    return task_model_for_model_config(task_model_config(config_path))


def task_model_for_model_config(config: ModelConfig) -> TaskModel:
    """The TaskModel of a validated config with the prompt files as they are now (see
    answering.model_row_for_config); it keeps the config without prompt_path and with its prompt files."""
    files = prompt_files()
    PromptTemplates(files)  # a broken file fails here, not on the worker
    stored = {key: value for key, value in config.as_json().items() if key != "prompt_path"}
    stored["prompt_files"] = [f"prompts/{PROMPTS_DIR.name}/{name}" for name in sorted(files)]
    return TASK_ANSWERS.row_for_config(config, answering.prompts_json(files), stored_config=stored)


def config_for_task_model(task_model: TaskModel) -> ModelConfig:
    """The config a model runs with (its stored .config); ConfigError for imported answers."""
    return TASK_ANSWERS.config_of(task_model)


def templates_of(task_model: TaskModel) -> PromptTemplates:
    """The templates a model's jobs send: its stored text, checked against its prompt_sha256 (PromptChanged
    otherwise); ValueError when the text is not the two files."""
    label = TASK_ANSWERS.label_of(task_model)
    stored = answering.stored_prompts(
        task_model.prompt_text,
        expected_sha256=task_model.prompt_sha256,
        label=label,
        what="the goal-step prompt files",
    )
    return PromptTemplates(stored, label=label)


TASK_ANSWERS = AnswerKind(
    ANSWER_TASKS,
    TaskModel,
    role="generator",
    label="goal-step model",
    refusal="imported answers have no model config to run; use a configured model",
    id_of=task_model_id_of,
    prompts=templates_of,
)


def answer_request(config: ModelConfig, *, key: str, prompt: str, n_candidates: int) -> LLMRequest:
    """One multiple-choice question: the embedded model under a letter grammar, a json_schema config under the
    answer schema, any other model free (parse_choice reads its text)."""
    grammar, schema = letter_grammar(n_candidates), letter_schema(n_candidates)
    return answering.constrained_request(config, key=key, prompt=prompt, grammar=grammar, schema=schema)


# --- jobs ---------------------------------------------------------------------------------------------------


def _answered(task_model: TaskModel, candidates_only: bool, pks: Sequence[int]) -> set[int]:
    rows = TaskAnswer.objects.filter(
        model=task_model, candidates_only=candidates_only, example_id__in=list(pks)
    )
    return set(rows.values_list("example_id", flat=True))


def answer_job_create(
    *,
    task_model: TaskModel,
    task_set: TaskSet,
    split: str = TaskSplit.TEST,
    candidates_only: bool = False,
    created_by: User | None = None,
    example_ids: Sequence[int] | None = None,
    enqueue: bool = True,
    retry_of: int | None = None,
) -> Job:
    """A job asking `task_model` every example of the set's split it has not answered in this mode (only those
    of `example_ids` when given). Enqueued once the surrounding transaction commits (enqueue=False: not at
    all). NothingToAnswer when nothing is left; ConfigError for imported answers; PromptChanged when the
    model's stored prompts no longer match their hash."""
    if split not in TaskSplit.values:
        raise ValueError(f"unknown split {split!r} (expected {', '.join(TaskSplit.values)})")
    config = TASK_ANSWERS.checked_config(task_model)  # fails now, not on the worker
    examples = TaskExample.objects.filter(task_set=task_set, split=split)
    if example_ids is not None:
        examples = examples.filter(pk__in=list(example_ids))
    answered = TaskAnswer.objects.filter(
        model=task_model, candidates_only=candidates_only, example__in=examples
    ).values_list("example_id", flat=True)
    items = list(
        examples.exclude(pk__in=answered).order_by("task", "position", "pk").values_list("pk", flat=True)
    )
    if not items:
        mode = "from the candidates alone " if candidates_only else ""
        raise NothingToAnswer(
            f"{task_model.model} ({task_model.model_id}) has answered every {split} example of task set "
            f"{task_set.name!r} {mode}asked for: nothing to answer"
        )
    parameters = {
        "task_set": task_set.pk,
        "task_set_name": task_set.name,
        "split": split,
        "candidates_only": candidates_only,
    }
    return TASK_ANSWERS.job_create(
        task_model, config, items, parameters, created_by=created_by, enqueue=enqueue, retry_of=retry_of
    )


class AnswerWork(ConfiguredWork[TaskModel, PromptTemplates]):
    """One request per example (see the module doc): the job's model (self.row), its templates
    (self.prompts)."""

    answers = TASK_ANSWERS

    def __init__(self, job: Job, backend: LLMBackend | None = None) -> None:
        super().__init__(job, backend)
        self.candidates_only = bool(job.parameters.get("candidates_only"))
        self.in_flight: dict[int, list[str]] = {}  # example pk -> its candidates, until its answer is stored

    def answered(self, pks: Sequence[int]) -> set[int]:
        return _answered(self.row, self.candidates_only, pks)

    def rows(self, pks: Sequence[int]) -> Mapping[int, TaskExample]:
        return TaskExample.objects.only("pk", "task", "prompt", "candidates").in_bulk(list(pks))

    def request(self, pk: int, row: TaskExample) -> LLMRequest:
        candidates = [str(text) for text in row.candidates]
        prompt = answer_prompt(  # KeyError / ValueError: an unknown task, or too few / many candidates
            task=row.task,
            prompt=row.prompt,
            candidates=candidates,
            templates=self.prompts,
            candidates_only=self.candidates_only,
        )
        self.in_flight[pk] = candidates
        return answer_request(self.config, key=str(pk), prompt=prompt, n_candidates=len(candidates))

    def save(self, results: Sequence[LLMResult]) -> None:
        answers = []
        for result in results:
            candidates = self.in_flight.pop(int(result.key), [])
            if result.ok:
                text = result.text or ""
                answers.append(
                    TaskAnswer(
                        model=self.row,
                        example_id=int(result.key),
                        candidates_only=self.candidates_only,
                        choice=parse_choice(text, len(candidates), candidates=candidates),
                        raw_output=text,
                        job_id=self.job.pk,
                    )
                )
        TaskAnswer.objects.bulk_create(
            answers,
            update_conflicts=True,
            unique_fields=["model", "example", "candidates_only"],
            update_fields=["choice", "raw_output", "job", "updated_at"],
        )

    def again(self, pks: list[int], created_by: User | None) -> Job:
        return answer_job_create(
            task_model=self.row,
            task_set=TaskSet.objects.get(pk=self.job.parameters["task_set"]),
            split=self.job.parameters.get("split", TaskSplit.TEST),
            candidates_only=self.candidates_only,
            created_by=created_by,
            example_ids=pks,
            retry_of=self.job.pk,
        )


answer_job_retry = AnswerWork.retry  # a new job over the failed examples still without an answer
answer_job_run = AnswerWork.run_job  # run (or resume) an answer_tasks job
