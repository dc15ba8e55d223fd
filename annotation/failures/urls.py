"""Pages that read judge and human failures together (staff): /failures/, /generations/<pk>/, and failures
by meaning: /failures/<judge-12|human-7>/similar/, /failures/patterns/[<topic id>/]; and their API,
/api/failures/ (`api_routes`, in the "api" namespace, mounted by annotation/mounting/urls/api.py)."""

from django.urls import path

from annotation.failures import views
from annotation.failures import views_meaning as failure_meaning
from annotation.failures.api import FailureListView

app_name = "failures"
urlpatterns = [
    path("failures/", views.failure_list, name="failure_list"),
    path("failures.csv", views.failure_list_csv, name="failure_list_csv"),
    path("generations/<int:pk>/", views.generation_detail, name="generation_detail"),
    path("failures/patterns/", failure_meaning.pattern_topics, name="pattern_topics"),
    path("failures/patterns/<int:topic>/", failure_meaning.failure_patterns, name="failure_patterns"),
    path("failures/<str:token>/similar/", failure_meaning.similar_failures, name="similar_failures"),
]

api_routes = [path("failures/", FailureListView.as_view(), name="failures")]
