"""What the annotation app registers once every app is loaded: its job kinds and text sources with the core,
the Prolific section of a study's page and each kind's own jobs (its folder's job_types.py). Nothing here
imports a kind's spec, a view or an admin module: the specs load when first asked for (the registry), the
admin with the URL conf (annotation/mounting/admin.py)."""

from __future__ import annotations

from annotation import kinds
from annotation.base.embedding import register_text_sources
from annotation.base.registry import STUDY_PAGE_PARTS
from annotation.mounting.job_types import register_job_types

PROLIFIC_STUDY_PAGE = "annotation.prolific.views.prolific_page_context"


def ready() -> None:
    register_job_types()
    for job_types in kinds.kind_modules("job_types"):  # a kind's own jobs, when it has any
        job_types.register_job_types()
    register_text_sources()
    if PROLIFIC_STUDY_PAGE not in STUDY_PAGE_PARTS:
        STUDY_PAGE_PARTS.append(PROLIFIC_STUDY_PAGE)
