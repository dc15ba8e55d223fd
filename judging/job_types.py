"""The judging app's kinds of job as the core (h2e_site.jobs) runs and shows them: generate, judge, pairwise
judge, import. Registered by name: the tasks, and the functions that start and retry jobs (job_api.py, the
*_jobs.py modules), are imported when a job is sent or started, not here."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from django.urls import reverse

from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import (
    ByPath,
    JobDescription,
    JobLink,
    JobSubject,
    JobType,
    TaskName,
    job_type_register,
)

from .job_kinds import GENERATE, IMPORT, JUDGE, JUDGE_PROBE, PAIRWISE_JUDGE
from .models import Generator, Judge

DEMO_WARNING = "demo model - judgments not meaningful"

# The kinds of job this app registers are named in job_kinds.py (the names stored in Job.kind).

JUDGE_MODE_LABELS = {
    "missing": "what is not judged yet",
    "parse_failed": "re-judge parse failures",
    "replace": "re-judge all, replacing",
}


def mode_label(job: Job) -> str:
    """A judge job's mode in words, one spelling everywhere (the Jobs list, the job's page); "" if none."""
    mode = str(job.parameters.get("mode") or "")
    return JUDGE_MODE_LABELS.get(mode, mode.replace("_", " "))


def describe_llm_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """Generate and judge jobs: their generator and judge (one query each), split or mode, and links."""
    generator_pks = {j.parameters.get("generator") for j in jobs} - {None}
    judge_pks = {j.parameters.get("judge") for j in jobs} - {None}
    generators = Generator.objects.in_bulk(list(generator_pks)) if generator_pks else {}
    judges = Judge.objects.in_bulk(list(judge_pks)) if judge_pks else {}
    return {
        job.pk: _description(
            job, generators.get(job.parameters.get("generator")), judges.get(job.parameters.get("judge"))
        )
        for job in jobs
    }


def _description(job: Job, generator: Generator | None, judge: Judge | None) -> JobDescription:
    subjects, links, facts = [], [], []
    if generator is not None:
        url = reverse("judging:generator_detail", args=[generator.pk])
        subjects.append(JobSubject("generator", generator.model, url, generator.generator_id))
    if judge is not None:
        warning = DEMO_WARNING if judge.is_demo_model else ""
        subjects.append(JobSubject("judge", judge.model, "", judge.judge_id, warning))
        url = f"{reverse('judging:leaderboard')}?judge={judge.judge_id}"
        links.append(JobLink("Leaderboard for this judge", url, "Leaderboard"))
    if job.kind == GENERATE:
        split = job.parameters.get("split") or "all splits"
        limit = job.parameters.get("limit")
        facts.append(("Split", f"{split} · at most {limit:,}" if limit else split))
        if generator is not None:
            links.append(
                JobLink("The generator's L2", reverse("judging:generator_detail", args=[generator.pk]))
            )
            if job.done:  # the next step once it has written L2
                links.append(JobLink("Judge these", reverse("judging:generator_judge", args=[generator.pk])))
    if job.parameters.get("mode"):
        facts.append(("Mode", mode_label(job)))
    return JobDescription(tuple(subjects), tuple(links), tuple(facts))


PROBE_KIND_LABELS = {
    "verbose": "verbose rewrite",
    "delete_step": "one step deleted",
    "swap_steps": "two steps swapped",
}


def probe_note(job: Job) -> str:
    """A judge probe job's kind of perturbation in words."""
    kind = str(job.parameters.get("probe_kind") or "")
    return PROBE_KIND_LABELS.get(kind, kind)


def describe_probe_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """As generate and judge jobs, with the probe's page among the links and its kind among the facts."""
    described = describe_llm_jobs(jobs)
    for job in jobs:
        base = described[job.pk]
        url = reverse("judging:probe_detail", args=[job.parameters["probe"]])
        link = JobLink("The probe's results", url, "Results")
        facts = (("Probe", probe_note(job)), *base.facts)
        described[job.pk] = JobDescription(base.subjects, (link, *base.links), facts)
    return described


def pairs_note(job: Job) -> str:
    """A pairwise judge job's size in words: "<n> pairs, both orders"."""
    n = len(job.parameters.get("pairs") or [])
    return f"{n:,} pair{'' if n == 1 else 's'}, both orders"


def import_command(job: Job) -> str:
    """The command that imports this job's saved files in this process (no worker needed)."""
    parameters = job.parameters
    paths = " ".join(shlex.quote(path) for path in parameters.get("paths", []))
    skip = " --skip-invalid" if parameters.get("skip_invalid") else ""
    if parameters.get("import_kind") == "h2e":
        return f"The files are saved; import them with: python manage.py import_h2e {paths}{skip}"
    command = f"python manage.py import_bench --split {parameters.get('split', 'bench')}{skip} {paths}"
    return f"The files are saved; import them with: {command}"


def register_job_types() -> None:
    hint = (
        "Generate and judge: “Generate L2” (here: from a config file), the admin's generators (“Generate "
        "L2…”, “Judge with…”), POST /api/jobs/, or manage.py generate / judge."
    )
    common: dict[str, Any] = {
        "describe": describe_llm_jobs,
        "create_serializer": "judging.serializers.JobCreateSerializer",
        "api_create": ByPath("judging.job_api.llm_job_api_create"),
        "api_parameters": (
            ("generator_id", "the generator's generator_id, if any"),
            ("judge_id", "the judge's judge_id, if any"),
        ),
    }
    job_type_register(
        JobType(
            GENERATE,
            TaskName("judging.run_generate_job"),
            label="Generate L2",
            retry=ByPath("judging.generate_jobs.generate_job_retry"),
            start_hint=hint,
            start_link=("Generate L2", "admin:judging_generate"),
            **common,
        )
    )
    job_type_register(
        JobType(
            JUDGE,
            TaskName("judging.run_judge_job"),
            label="Judge (How2Score)",
            note=mode_label,
            retry=ByPath("judging.judge_jobs.judge_job_retry"),
            **common,
        )
    )
    job_type_register(
        JobType(
            PAIRWISE_JUDGE,
            TaskName("judging.run_pairwise_judge_job"),
            label="Pairwise judge (L2 vs L2)",
            note=pairs_note,
            retry=ByPath("judging.pairwise_jobs.pairwise_judge_job_retry"),
            describe=describe_llm_jobs,
            api_parameters=common["api_parameters"],
            start_hint="Pairwise judge: a pairwise study's page (its LLM twin) starts one over its pairs.",
        )
    )
    job_type_register(
        JobType(
            JUDGE_PROBE,
            TaskName("judging.run_judge_probe_job"),
            label="Judge probe",
            note=probe_note,
            describe=describe_probe_jobs,
            api_parameters=common["api_parameters"],
            start_hint="Judge probe: “Judge probes” (a form that starts one), or manage.py probe_judge.",
            start_link=("Judge probes", "judging:probes"),
        )
    )
    job_type_register(
        JobType(
            IMPORT,
            TaskName("judging.run_import_job"),
            label="Import",
            resumable=False,
            start_hint="Import: “Import h2e files” (here), POST /api/imports/, or manage.py import_h2e / "
            "import_bench.",
            start_link=("Import h2e files", "admin:judging_import"),
            run_hint=import_command,
        )
    )
