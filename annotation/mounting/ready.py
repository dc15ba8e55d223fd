"""What the annotation app registers once every app is loaded: its job kinds and text sources with the core,
the Prolific section of a study's page, each kind's own jobs (its folder's job_types.py) and hooks
(StudyKindSpec.ready) and every package's admin (Django's autodiscovery reads only annotation.admin)."""

from __future__ import annotations

from importlib import import_module

from django.utils.module_loading import module_has_submodule

from annotation import kinds
from annotation.base.embedding import register_text_sources
from annotation.base.registry import KINDS, STUDY_PAGE_PARTS
from annotation.mounting.job_types import register_job_types

ADMIN_PACKAGES = (
    "annotation.base",
    "annotation.prolific",
    *(f"annotation.kinds.{name}" for name in kinds.KINDS),
)
PROLIFIC_STUDY_PAGE = "annotation.prolific.views.prolific_page_context"


def ready() -> None:
    register_job_types()
    for name in kinds.KINDS:  # a kind's own jobs: its folder's job_types.py, when it has one
        kind = import_module(f"{kinds.__name__}.{name}")
        if module_has_submodule(kind, "job_types"):
            import_module(f"{kind.__name__}.job_types").register_job_types()
    register_text_sources()
    if PROLIFIC_STUDY_PAGE not in STUDY_PAGE_PARTS:
        STUDY_PAGE_PARTS.append(PROLIFIC_STUDY_PAGE)
    for spec in KINDS.values():
        spec.ready()
    for package in ADMIN_PACKAGES:
        if module_has_submodule(import_module(package), "admin"):
            import_module(f"{package}.admin")
