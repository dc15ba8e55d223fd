"""The annotation app's pages at the site's root, as h2e_site/urls.py mounts them: `pages` before judging's
(a kind's /leaderboard/calibrated/ before judging's /leaderboard/ routes), `pages_after_apps` after every
other app's (a kind's /judges/<judge_id>/ after judging's /judges/rank-correlation/)."""

from django.urls import URLPattern, URLResolver, include, path

from annotation.base.registry import KINDS

pages: list[URLPattern | URLResolver] = [
    path("a/", include("annotation.mounting.urls.annotator")),
    path("prolific/", include("annotation.prolific.urls")),
    path("studies/", include("annotation.mounting.urls.studies")),
    path("agreement/", include("annotation.mounting.urls.agreement")),
    *(pattern for spec in KINDS.values() for pattern in spec.site_urls()),
    path("", include("annotation.failures.urls")),
]

pages_after_apps = [pattern for spec in KINDS.values() for pattern in spec.site_urls_after_apps()]
