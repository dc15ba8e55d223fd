"""What each app tells the core about its kinds of job: its name and label, the Celery task that runs one,
and how to retry, describe and start it.

The core knows no app and lists no kind: an app defines its kinds' names and registers them in its
AppConfig.ready() (each app's job_types.py), and the core's job creation, enqueue, resume-at-worker-start,
retry, the Jobs pages, the admin and the API read them from here. Job.kind is a plain string column, so a
new kind needs no migration of the core.

The Job row (models.py) reads its kind's label and note from here, so this module does not import it back:
a JobType is generic in the row its functions take (JobRowT; models.Job in every registration), and what the
registry itself reads of a row is a JobRow, its kind.

Registering a kind imports nothing that runs it (every command and web process registers every kind at
start-up): its Celery task is named (TaskName, sent by name), and the functions that start or retry its jobs
are dotted paths (ByPath), imported the first time one is called. Nor does it load Celery: the project's
Celery app (settings.JOBS_CELERY_APP, a dotted path) is imported when the first job is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from django.conf import settings
from django.utils.choices import BaseChoiceIterator
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from celery import Celery
    from celery.result import AsyncResult
    from django.contrib.auth.models import User


_TASKS_IMPORT = threading.Lock()


def celery_app() -> Celery:
    """The project's Celery app (settings.JOBS_CELERY_APP), imported on first use: creating it makes it the
    current app, which the apps' @shared_task tasks then belong to."""
    app: Celery = import_string(settings.JOBS_CELERY_APP)
    return app


@dataclass(frozen=True)
class TaskName:
    """A Celery task by its name (`@shared_task(name=...)`), not imported: a job is sent to a worker by name,
    as Celery's own send_task does; a process that runs tasks eagerly (a test) imports the tasks modules
    (each app's tasks.py, as a worker does at its start) and runs the task here."""

    name: str

    def apply_async(self, args: list[Any], queue: str) -> AsyncResult:
        app = celery_app()
        if app.conf.task_always_eager:
            return self.task().apply_async(args=args, queue=queue)
        return app.send_task(self.name, args=args, queue=queue)

    def task(self) -> Any:
        """The task object, importing the tasks modules if no import has registered it yet (LookupError if
        none defines it). One thread imports them, another asking meanwhile waits for it: Celery's discovery
        of the tasks modules returns at once, having imported nothing, while another thread is in it."""
        app = celery_app()
        with _TASKS_IMPORT:
            if self.name not in app.tasks:
                app.loader.import_default_modules()
        try:
            return app.tasks[self.name]
        except KeyError:
            raise LookupError(f"no tasks module defines the Celery task {self.name!r}") from None


@dataclass(frozen=True)
class ByPath:
    """A function named by its dotted path, imported the first time it is called: what starts or retries a
    kind's jobs imports the code that runs them, which registering the kind must not."""

    path: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return import_string(self.path)(*args, **kwargs)


@dataclass(frozen=True)
class JobSubject:
    """What a job runs on, as the Jobs pages show it: "<role> <name> (<ident>)" linking to its page."""

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


KIND_MAX_LENGTH = 64  # Job.kind's column


class JobRow(Protocol):
    """What the registry reads of a job (a models.Job): its kind."""

    @property
    def kind(self) -> str: ...


JobRowT = TypeVar("JobRowT", bound=JobRow)


@dataclass(frozen=True)
class JobType(Generic[JobRowT]):
    kind: str  # the name stored in Job.kind (at most KIND_MAX_LENGTH characters)
    # the Celery task that runs (or resumes) one job, called with the job's pk: TaskName("app.run_x_job") or
    # the task itself (anything with .name and .apply_async(args=..., queue=...))
    task: Any
    label: str = ""  # as the pages show the kind (default: its name)
    note: Callable[[JobRowT], str] | None = None  # a few words beside the label on the Jobs list ("": none)
    # read-only parameters the API shows at the top level of a job of any kind: (name, help text)
    api_parameters: tuple[tuple[str, str], ...] = ()
    resumable: bool = True  # re-enqueued when a dead worker left it RUNNING (the run loop resumes it)
    # a new job over the items that failed (a ByPath, so that registering imports nothing that runs jobs)
    retry: Callable[[JobRowT, User | None], JobRowT] | None = None
    # the subjects and links of jobs of this kind, by pk (a few queries per call)
    describe: Callable[[Sequence[JobRowT]], dict[int, JobDescription]] | None = None
    # POST /api/jobs/ {"kind": ..., ...}: the body's serializer and the service that starts the job from its
    # validated data (None: this kind is started elsewhere, e.g. by its own endpoint; a ByPath, as retry)
    create_serializer: str = ""  # dotted path of the serializer class (imported when the API needs it)
    api_create: Callable[[dict[str, Any], User | None], JobRowT] | None = None
    start_hint: str = ""  # on the Jobs page: where jobs of this kind are started
    # the command that does one job's work without a worker, for a job that could not be queued (the
    # broker unreachable: services.job_not_queued_message); None: start_hint is shown
    run_hint: Callable[[JobRowT], str] | None = None
    start_link: tuple[str, str] | None = None  # (label, URL name) of a page that starts one, as a button


_JOB_TYPES: dict[str, JobType[Any]] = {}


def job_type_register(job_type: JobType[Any]) -> None:
    """Register (or replace, on a reload) the job type of a kind."""
    if not job_type.kind or len(job_type.kind) > KIND_MAX_LENGTH:
        raise ValueError(f"a job kind is 1 to {KIND_MAX_LENGTH} characters, not {job_type.kind!r}")
    _JOB_TYPES[job_type.kind] = job_type


def job_type_for(kind: str) -> JobType[Any]:
    try:
        return _JOB_TYPES[kind]
    except KeyError:
        raise LookupError(f"no app registered the job kind {str(kind)!r}") from None


def job_types() -> list[JobType[Any]]:
    return list(_JOB_TYPES.values())


def job_kind_label(kind: str) -> str:
    """The kind as the pages show it: its registered label, else its name (a kind no app registers now)."""
    job_type = _JOB_TYPES.get(kind)
    return (job_type.label if job_type else "") or kind


def job_kind_choices() -> list[tuple[str, str]]:
    """(kind, label) of every registered kind, by label: the admin's filter, the API's filter and schema."""
    return sorted(((t.kind, job_kind_label(t.kind)) for t in job_types()), key=lambda choice: choice[1])


class RegisteredKinds(BaseChoiceIterator):
    """job_kind_choices() read each time they are iterated: a form field's or filter's choices that follow the
    registry (and that drf-spectacular lists as the enum of the schema, which it does not for a callable)."""

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from job_kind_choices()


def job_note(job: JobRow) -> str:
    """The few words the job's kind shows beside its label on the Jobs list ("" when none)."""
    job_type = _JOB_TYPES.get(job.kind)
    return job_type.note(job) if job_type and job_type.note else ""


def job_api_parameters() -> dict[str, str]:
    """The parameters the API shows at a job's top level, with their help text, from every kind."""
    return {name: help_text for t in job_types() for name, help_text in t.api_parameters}


def start_links() -> list[JobLink]:
    """The buttons of the pages that start jobs, from the registered kinds (e.g. "Import h2e files")."""
    from django.urls import reverse

    return [
        JobLink(label, reverse(name)) for t in job_types() if t.start_link for label, name in [t.start_link]
    ]
