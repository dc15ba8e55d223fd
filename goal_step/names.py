"""The one rule for a task set's name, shared by the builder (jobs.task_set_create, its form, the API and the
admin) and the BIG-bench importer: a slug that fits TaskSet.name and is not the name of a page under /tasks/
(`/tasks/build/` starts a build, so a set named "build" could never be shown)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from .models import TaskSet

RESERVED_NAMES = frozenset({"build"})  # the fixed segments under tasks/ in urls.py (a test checks)
MAX_NAME_CHARS: int = TaskSet._meta.get_field("name").max_length or 64


def task_set_name_check(name: str) -> None:
    """ValueError beginning "name:" when `name` cannot be a new task set's name."""
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"name: at most {MAX_NAME_CHARS} characters, got {len(name)}")
    try:
        validate_slug(name)
    except ValidationError:
        raise ValueError(f"name: {name[:40]!r} is not a slug (letters, digits, - and _)") from None
    if name in RESERVED_NAMES:
        reserved = ", ".join(sorted(RESERVED_NAMES))
        raise ValueError(f"name: {name!r} is taken by a page of /tasks/ (reserved: {reserved})")
    if TaskSet.objects.filter(name=name).exists():
        raise ValueError(f"name: a task set {name!r} exists already")
