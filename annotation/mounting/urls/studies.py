"""The researcher's study pages (staff): /studies/, each kind's own pages of a study first (its
`page_urls`), then the flow's and Prolific's."""

from annotation.base.registry import KINDS
from annotation.flow.urls import study_urls
from annotation.prolific import urls as prolific

app_name = "annotation"
urlpatterns = [
    *(pattern for spec in KINDS.values() for pattern in spec.page_urls()),
    *study_urls,
    *prolific.study_urls,
]
