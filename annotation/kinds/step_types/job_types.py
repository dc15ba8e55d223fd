"""The kind's job, as the core (h2e_site.jobs) runs and shows it: classify_steps, a model answering the
step-type candidates of a study (classify.py). annotation/mounting/ready.py registers it through the
registry; its task and the functions that start and retry it are named, imported when a job is sent or
started (tasks.py, classify.py)."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from annotation.base.job_kinds import CLASSIFY_STEPS
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
    return JobDescription(tuple(subjects), tuple(links))


def register_job_types() -> None:
    job_type_register(
        JobType(
            CLASSIFY_STEPS,
            TaskName("annotation.run_classify_job"),
            label="Classify step types",
            retry=ByPath("annotation.kinds.step_types.classify.classify_job_retry"),
            describe=describe_classify_jobs,
            create_serializer="annotation.kinds.step_types.classify_serializers.ClassifyJobCreateSerializer",
            api_create=ByPath("annotation.kinds.step_types.tasks.classify_api_create"),
            start_hint="Classify step types: a step-types study's “Step-type models” page, POST /api/jobs/, "
            "or manage.py classify_steps.",
        )
    )
