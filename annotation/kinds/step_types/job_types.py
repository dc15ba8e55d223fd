"""The kind's job, as the core (h2e_site.jobs) runs and shows it: classify_steps, a model answering the
step-type candidates of a study (classify.py). annotation/mounting/ready.py registers it through the
registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.urls import reverse

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Study
from annotation.kinds.step_types.classify import classify_job_create, classify_job_retry, classify_job_run
from annotation.kinds.step_types.models import StepTypeClassifier
from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import JobDescription, JobLink, JobSubject, JobType, job_type_register

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEMO_WARNING = "demo model - predictions not meaningful"


@shared_task(name="annotation.run_classify_job", acks_late=True, reject_on_worker_lost=True)
def run_classify_job(job_id: int) -> None:
    """Run or resume a classify_steps Job (a redelivered message resumes it; a finished one is left)."""
    classify_job_run(job_id=job_id)


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


def _api_create(data: dict[str, Any], created_by: User | None) -> Job:
    return classify_job_create(classifier=data["classifier_id"], study=data["study"], created_by=created_by)


def register_job_types() -> None:
    job_type_register(
        JobType(
            CLASSIFY_STEPS,
            run_classify_job,
            label="Classify step types",
            retry=classify_job_retry,
            describe=describe_classify_jobs,
            create_serializer="annotation.kinds.step_types.classify_serializers.ClassifyJobCreateSerializer",
            api_create=_api_create,
            start_hint="Classify step types: a step-types study's “Step-type models” page, POST /api/jobs/, "
            "or manage.py classify_steps.",
        )
    )
