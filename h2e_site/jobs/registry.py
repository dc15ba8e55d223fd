"""What each app tells the core about its kinds of job: the Celery task that runs one, and how to retry it.

The core knows no app: an app registers its kinds in its AppConfig.ready() (judging: generate, judge, import;
mining: mine), and the core's enqueue, resume-at-worker-start, retry and the Jobs page read them from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from .models import Job


@dataclass(frozen=True)
class JobSubject:
    """What a job runs on, as the Jobs pages show it: "generator gpt-4.1 (3f2a…)" linking to its page."""

    role: str
    name: str
    url: str = ""
    ident: str = ""
    warning: str = ""  # e.g. a demo model whose output is not meaningful


@dataclass(frozen=True)
class JobLink:
    label: str
    url: str
    short_label: str = ""  # in the Jobs list's narrow column (default: label)

    @property
    def short(self) -> str:
        return self.short_label or self.label


@dataclass(frozen=True)
class JobDescription:
    subjects: tuple[JobSubject, ...] = ()
    links: tuple[JobLink, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) shown on the job's page


Describe = Callable[[Sequence["Job"]], dict[int, JobDescription]]


@dataclass(frozen=True)
class JobType:
    kind: str
    task: Any  # the Celery task that runs (or resumes) one job; called with the job's pk
    resumable: bool = True  # re-enqueued when a dead worker left it RUNNING (the run loop resumes it)
    retry: Callable[[Job, User | None], Job] | None = None  # a new job over the items that failed
    describe: Describe | None = None  # the subjects and links of jobs of this kind (a few queries per call)
    # POST /api/jobs/ {"kind": ..., ...}: the body's serializer and the service that starts the job from its
    # validated data (None: this kind is started elsewhere, e.g. a mining run's own endpoint)
    create_serializer: str = ""  # dotted path of the serializer class (imported when the API needs it)
    api_create: Callable[[dict[str, Any], User | None], Job] | None = None
    start_hint: str = ""  # on the Jobs page: where jobs of this kind are started
    start_link: tuple[str, str] | None = None  # (label, URL name) of a page that starts one, as a button


_JOB_TYPES: dict[str, JobType] = {}


def job_type_register(job_type: JobType) -> None:
    """Register (or replace, on a reload) the job type of a kind."""
    _JOB_TYPES[job_type.kind] = job_type


def job_type_for(kind: str) -> JobType:
    try:
        return _JOB_TYPES[kind]
    except KeyError:
        raise LookupError(f"no app registered the job kind {str(kind)!r}") from None


def job_types() -> list[JobType]:
    return list(_JOB_TYPES.values())


def start_links() -> list[JobLink]:
    """The buttons of the pages that start jobs, from the registered kinds (e.g. "Import h2e files")."""
    from django.urls import reverse

    return [
        JobLink(label, reverse(name)) for t in job_types() if t.start_link for label, name in [t.start_link]
    ]
