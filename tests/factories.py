"""Small plain functions that create rows for API, page and admin tests.

Judgment.generator and Judgment.topic are denormalised from the generation; make_judgment sets them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Permission
from django.test import Client

from h2e_site.jobs.models import Job, JobStatus
from judging.job_kinds import IMPORT
from judging.models import CriticalFailure, Generation, Generator, Judge, Judgment
from mining.models import Procedure, Split, Topic

_seq = itertools.count(1)

Failure = tuple[str, Sequence[Any], Sequence[Any]]  # (description, L1 steps, L2 steps)


def make_user(*, username: str | None = None, is_staff: bool = False, password: str = "pw") -> AbstractUser:
    user = get_user_model().objects.create_user(
        username=username or f"user{next(_seq)}", password=password, is_staff=is_staff
    )
    return user  # type: ignore[return-value]


def logged_in(user: AbstractUser) -> Client:
    """A fresh test client (its own cookies) with `user` logged in."""
    client = Client()
    client.force_login(user)
    return client


def make_runner(**fields: Any) -> AbstractUser:
    """A staff user with the run permission (jobs.add_job), not a superuser."""
    user = make_user(is_staff=True, **fields)
    user.user_permissions.add(Permission.objects.get(content_type__app_label="jobs", codename="add_job"))
    return user


def study_on_prolific(study: Any) -> Any:
    """The study with a draft on Prolific (the fake one the test's settings point at), its id stored."""
    from annotation.prolific.client import ProlificClient

    study.prolific_study_id = ProlificClient().study_create(
        {"name": "n", "description": "d", "external_study_url": "https://x/", "completion_codes": [],
         "total_available_places": 3, "estimated_completion_time": 5, "reward": 100}
    )["id"]  # fmt: skip
    study.save(update_fields=["prolific_study_id"])
    return study


def make_prolific_staff(*, bonuses: bool = True, jobs: bool = True) -> AbstractUser:
    """A staff user who may act on Prolific (annotation.run_prolific_study), pay bonuses (unless `bonuses`
    is False) and start the jobs those actions queue (unless `jobs` is False); not a superuser."""
    user = make_user(is_staff=True)
    names = [("annotation", "run_prolific_study")]
    names += [("annotation", "pay_prolific_bonuses")] if bonuses else []
    names += [("jobs", "add_job")] if jobs else []
    for app_label, codename in names:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return user


def make_topic(name: str = "Home & Hobbies") -> Topic:
    topic, _ = Topic.objects.get_or_create(name=name)
    return topic


def make_procedure(
    *,
    goal: str = "Repot a houseplant",
    steps: Sequence[str] = ("Water the plant", "Remove it from the pot", "Place it in the new pot"),
    resources: Sequence[str] = ("new pot", "potting soil"),
    topic: Topic | str | None = "Home & Hobbies",
    split: str = Split.BENCH,
    source_example_id: str | None = None,
) -> Procedure:
    if isinstance(topic, str):
        topic = make_topic(topic)
    return Procedure.objects.create(
        source_example_id=source_example_id or f"ex-{next(_seq)}",
        topic=topic,
        goal=goal,
        steps=list(steps),
        resources=list(resources),
        split=split,
    )


def make_generator(*, model: str = "gpt-4.1", generator_id: str | None = None) -> Generator:
    return Generator.objects.create(
        generator_id=generator_id or f"gen{next(_seq):09d}",
        model=model,
        backend="openai",
        prompt_style="inst",
    )


def make_judge(
    *, model: str = "how2everything/how2judge", judge_id: str | None = None, is_demo: bool = False
) -> Judge:
    return Judge.objects.create(
        judge_id=judge_id or f"jdg{next(_seq):09d}", model=model, backend="vllm", is_demo_model=is_demo
    )


def make_generation(
    *,
    generator: Generator | None = None,
    procedure: Procedure | None = None,
    predicted_steps: Sequence[str] = ("Water it", "Take it out", "Put it in the new pot", "Add soil"),
    completion: str | None = None,
) -> Generation:
    steps = list(predicted_steps)
    return Generation.objects.create(
        generator=generator or make_generator(),
        procedure=procedure or make_procedure(),
        predicted_steps=steps,
        model_completion=completion
        if completion is not None
        else "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)),
        prompt="Write the steps.",
        n_tokens=20,
    )


def make_judgment(
    *,
    generation: Generation | None = None,
    judge: Judge | None = None,
    failures: Sequence[Failure] = (),
    parse_failed: bool = False,
    reasoning: str = "The steps look fine.",
    raw_output: str = '{"critical_failures": []}',
) -> Judgment:
    generation = generation or make_generation()
    judgment = Judgment.objects.create(
        judge=judge or make_judge(),
        generation=generation,
        generator_id=generation.generator_id,
        procedure_id=generation.procedure_id,
        topic_id=generation.procedure.topic_id,
        reasoning=reasoning,
        raw_output=raw_output,
        parse_failed=parse_failed,
        has_failure=bool(failures) and not parse_failed,
        n_failures=0 if parse_failed else len(failures),
    )
    CriticalFailure.objects.bulk_create(
        CriticalFailure(judgment=judgment, order=i, description=d, l1_steps=list(l1), l2_steps=list(l2))
        for i, (d, l1, l2) in enumerate(failures)
    )
    return judgment


def make_job(
    *,
    status: str = JobStatus.RUNNING,
    kind: str = IMPORT,
    total: int = 10,
    done: int = 4,
    failed: int = 0,
    created_by: AbstractUser | None = None,
) -> Job:
    return Job.objects.create(
        kind=kind, status=status, total=total, done=done, failed=failed, created_by=created_by, parameters={}
    )


def make_scored_world() -> dict[str, Any]:
    """Two generators x two judges over three procedures, with failures and a parse failure."""
    procedures = [
        make_procedure(goal=f"Goal {i}", topic=t) for i, t in enumerate(["Health", "Health", "Religion"])
    ]
    gen_a, gen_b = make_generator(model="model-a"), make_generator(model="model-b")
    judge_x, judge_y = make_judge(model="org/judge-x"), make_judge(model="judge-y", is_demo=True)
    generations = {g: [make_generation(generator=g, procedure=p) for p in procedures] for g in (gen_a, gen_b)}
    fail: list[Failure] = [("Skips removing the plant", [2], [2])]
    for judge in (judge_x, judge_y):
        a1, a2, a3 = generations[gen_a]
        make_judgment(generation=a1, judge=judge)
        make_judgment(generation=a2, judge=judge, failures=fail)
        make_judgment(generation=a3, judge=judge, parse_failed=(judge == judge_x))
        b1, b2, b3 = generations[gen_b]
        make_judgment(generation=b1, judge=judge, failures=fail * 2 if judge == judge_y else ())
        make_judgment(generation=b2, judge=judge)
        make_judgment(generation=b3, judge=judge)
    return {
        "procedures": procedures,
        "generators": (gen_a, gen_b),
        "judges": (judge_x, judge_y),
        "generations": generations,
    }
