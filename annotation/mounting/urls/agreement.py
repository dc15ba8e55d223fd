"""Agreement pages (staff): each kind's own first (its `agreement_urls`, before "<slug>/": none of them is a
study's page), then the flow's /agreement/, /agreement/<study>/, /agreement/<study>/judges/<judge_id>/."""

from annotation.base.registry import KINDS
from annotation.flow.urls import agreement_urls

app_name = "agreement"
urlpatterns = [
    *(pattern for spec in KINDS.values() for pattern in spec.agreement_urls()),
    *agreement_urls,
]
