"""The project's URLs: every app's pages, and one API (one router, the "api" namespace) over every app.

The admin registers here, as the URL conf mounts it: Django's SimpleAdminConfig (settings) leaves the admin
modules out of django.setup(), which every command and worker pays; every app's admin.py, then the annotation
packages' (annotation/mounting/admin.py), are imported before the admin's URLs are built."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from annotation.mounting.admin import register_admins
from annotation.mounting.urls import api as annotation_api
from annotation.mounting.urls import site as annotation_site
from goal_step import api as goal_step_api
from goal_step import urls as goal_step_urls
from h2e_site.api_views import api_not_found
from h2e_site.jobs import api as jobs_api
from judging import api as judging_api

admin.autodiscover()
register_admins()


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """The static icon's URL is resolved per request (it carries a content hash once collected)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


api_router = DefaultRouter()
for prefix, viewset, basename in [*jobs_api.ROUTES, *judging_api.ROUTES]:
    api_router.register(prefix, viewset, basename=basename)
api_urlpatterns = [
    *judging_api.urlpatterns,
    *annotation_api.api_routes,
    *goal_step_api.api_urlpatterns,
    path("", include(api_router.urls)),
]

urlpatterns = [
    # Browsers ask for /favicon.ico on every site; the icon is the vendored static/favicon.svg.
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The docs page is a page to GET: OPTIONS would render its template with the view's metadata (a 500).
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema", http_method_names=["get", "head"]),
        name="api-docs",
    ),
    path("api/", include("annotation.mounting.urls.api")),
    path("api/mining/", include("mining.api")),
    path("api/", include((api_urlpatterns, "api"))),
    # Any other /api/.../ path: a JSON 404 (a path without its final slash still gets APPEND_SLASH)
    re_path(r"^api/[\s\S]*/$", api_not_found),
    path("jobs/", include("h2e_site.jobs.urls")),
    path("mining/", include("mining.urls")),
    path("", include("goal_step.urls")),  # /tasks/: goal-step task sets
    # The same pages under the names they had while they lived in the mining app (mining:task_set, ...).
    path("", include((goal_step_urls.urlpatterns, "mining"))),
    # The annotation app's pages (/a/, /prolific/, /studies/, /agreement/, the failure browser, each kind's
    # own): before judging's (/leaderboard/calibrated/ before its /leaderboard/ routes) ...
    *annotation_site.pages,
    path("", include("judging.urls")),
    # ... and those after it (/judges/<judge_id>/ after its /judges/rank-correlation/).
    *annotation_site.pages_after_apps,
]
