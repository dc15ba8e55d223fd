"""The annotation app's kinds of job as the core (h2e_site.jobs) runs and shows them: classify_steps (a model
answers the step-type candidates of a study; annotation/kinds/step_types/classify.py), failure_patterns (a
topic's failure descriptions clustered; annotation/failures/meaning/), calibration_round (a calibration
study's next round over a large frame; annotation/kinds/critical_failures/calibration/jobs.py) and the
Prolific jobs (sync, review,
bonuses; annotation/prolific/jobs.py). Registered by name: the tasks (tasks.py), and the functions that start
and retry jobs (job_api.py, classify.py), are imported when a job is sent or started, not here."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from django.urls import reverse

from annotation.base.job_kinds import (
    CALIBRATION_ROUND,
    CLASSIFY_STEPS,
    FAILURE_PATTERNS,
    PROLIFIC_BONUSES,
    PROLIFIC_REVIEW,
    PROLIFIC_SYNC,
)
from annotation.base.models import Study
from annotation.kinds.step_types.models import StepTypeClassifier
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

DEMO_WARNING = "demo model - predictions not meaningful"


def describe_classify_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """Their classifier and study (one query each) and a link to the study's step-type models page."""
    classifier_pks = {j.parameters.get("classifier") for j in jobs} - {None}
    study_pks = {j.parameters.get("study") for j in jobs} - {None}
    classifiers = StepTypeClassifier.objects.in_bulk(list(classifier_pks)) if classifier_pks else {}
    studies = Study.objects.in_bulk(list(study_pks)) if study_pks else {}
    return {
        job.pk: _description(
            job, classifiers.get(job.parameters.get("classifier")), studies.get(job.parameters.get("study"))
        )
        for job in jobs
    }


def _description(job: Job, classifier: StepTypeClassifier | None, study: Study | None) -> JobDescription:
    subjects, links = [], []
    if classifier is not None:
        warning = DEMO_WARNING if classifier.is_demo_model else ""
        subjects.append(JobSubject("model", classifier.model, "", classifier.classifier_id, warning))
    if study is not None:
        url = reverse("annotation:step_type_models", args=[study.slug])
        subjects.append(JobSubject("study", study.title, url, study.slug))
        links.append(JobLink("The study's step-type models", url, "Step-type models"))
    if job.parameters.get("retry_of"):
        origin = job.parameters["retry_of"]
        links.append(JobLink(f"The job it retries (#{origin})", reverse("jobs:job_detail", args=[origin])))
    return JobDescription(tuple(subjects), tuple(links))


def describe_pattern_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The topic, k and seed of each failure_patterns job, and its topic's failure-patterns page."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        url = reverse("failures:failure_patterns", args=[parameters.get("topic", 0)])
        if parameters.get("run"):
            url += f"?run={parameters['run']}"
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("topic", str(parameters.get("topic_name", "")), url),),
            links=(JobLink("The topic's failure patterns", url, "Patterns"),),
            facts=(("clusters (k)", str(parameters.get("k", ""))), ("seed", str(parameters.get("seed", "")))),
        )
    return descriptions


def _pattern_note(job: Job) -> str:
    parameters = job.parameters
    return f"{parameters.get('topic_name', '')}: k={parameters.get('k')}, seed {parameters.get('seed')}"


def _pattern_command(job: Job) -> str:
    parameters = job.parameters
    topic = shlex.quote(str(parameters.get("topic_name", "")))
    return (
        f"Run it with: python manage.py failure_patterns --topic {topic} --k {parameters.get('k')} "
        f"--seed {parameters.get('seed')} --inline"
    )


def describe_prolific_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The study of each Prolific job (its page, where the job was started) and what came of it."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        url = reverse("annotation:study_detail", args=[parameters.get("study_slug", "")]) + "#prolific"
        facts = [
            (name, str(parameters[name])) for name in ("action", "reason", "result") if parameters.get(name)
        ]
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("study", str(parameters.get("study_slug", "")), url),),
            links=(JobLink("The study's Prolific section", url, "Study"),),
            facts=tuple(facts),
        )
    return descriptions


def describe_round_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The study of each calibration_round job (its page's calibration section) and the round's design."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        slug = str(parameters.get("study_slug", ""))
        url = reverse("annotation:study_detail", args=[slug]) + "#calibration" if slug else ""
        facts = [("size (n)", str(parameters.get("size", ""))), ("design", str(parameters.get("design", ""))),
                 ("seed", str(parameters.get("seed", "")))]  # fmt: skip
        if parameters.get("round"):
            facts.append(("round", f"{parameters['round']}: {parameters.get('new_items', 0)} new items"))
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("study", slug, url, slug),) if slug else (),
            links=(JobLink("The study's calibration sample", url, "Study"),) if url else (),
            facts=tuple(facts),
        )
    return descriptions


def _round_note(job: Job) -> str:
    parameters = job.parameters
    return f"{parameters.get('study_slug', '')}: n={parameters.get('size')}, {parameters.get('design')}"


PROLIFIC_JOB_LABELS = {
    PROLIFIC_SYNC: ("Prolific: sync submissions", TaskName("annotation.run_prolific_sync_job")),
    PROLIFIC_REVIEW: ("Prolific: review submissions", TaskName("annotation.run_prolific_review_job")),
    PROLIFIC_BONUSES: ("Prolific: pay bonuses", TaskName("annotation.run_prolific_bonuses_job")),
}


def register_job_types() -> None:
    for kind, (label, task) in PROLIFIC_JOB_LABELS.items():
        job_type_register(
            JobType(
                kind,
                task,
                label=label,
                note=lambda job: str(job.parameters.get("study_slug", "")),
                describe=describe_prolific_jobs,
                start_hint=f"{label}: a study page's Prolific section (needs the Prolific permissions).",
            )
        )
    job_type_register(
        JobType(
            CLASSIFY_STEPS,
            TaskName("annotation.run_classify_job"),
            label="Classify step types",
            retry=ByPath("annotation.kinds.step_types.classify.classify_job_retry"),
            describe=describe_classify_jobs,
            create_serializer="annotation.kinds.step_types.classify_serializers.ClassifyJobCreateSerializer",
            api_create=ByPath("annotation.mounting.job_api.classify_api_create"),
            start_hint="Classify step types: a step-types study's “Step-type models” page, POST /api/jobs/, "
            "or manage.py classify_steps.",
        )
    )
    job_type_register(
        JobType(
            FAILURE_PATTERNS,
            TaskName("annotation.run_failure_patterns_job"),
            label="Failure patterns",
            note=_pattern_note,
            describe=describe_pattern_jobs,
            create_serializer="annotation.failures.meaning.serializers.FailurePatternsJobCreateSerializer",
            api_create=ByPath("annotation.mounting.job_api.failure_patterns_api_create"),
            run_hint=_pattern_command,
            start_hint="Cluster a topic's failure descriptions: the failure browser's “Failure patterns” "
            "page, POST /api/jobs/, or manage.py failure_patterns --topic NAME.",
        )
    )
    job_type_register(
        JobType(
            CALIBRATION_ROUND,
            TaskName("annotation.run_calibration_round_job"),
            label="Calibration round",
            note=_round_note,
            describe=describe_round_jobs,
            start_hint="Draw a calibration study's next round over a large frame: the study page's "
            "“Draw the next round”, or POST /api/studies/<slug>/calibration-rounds/.",
        )
    )
