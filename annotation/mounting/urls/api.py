"""The annotation app's REST API (DRF, staff), mounted under /api/ by h2e_site/urls.py: `urlpatterns`, each
kind's own endpoints (its `api_urls`: a study's agreement, a judge's report card, gold, ...), and
`api_routes`, the endpoints h2e_site/urls.py joins to every app's in the "api" namespace: the failure
browser's list (annotation/failures/urls.py) and each kind's (its `api_routes`)."""

from annotation.base.registry import KINDS
from annotation.failures import urls as failures

urlpatterns = [pattern for spec in KINDS.values() for pattern in spec.api_urls()]

api_routes = [
    *failures.api_routes,
    *(pattern for spec in KINDS.values() for pattern in spec.api_routes()),
]
