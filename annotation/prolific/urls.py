"""Prolific's routes: what Prolific calls, its webhooks (/prolific/hooks/, signed;
annotation/prolific/hooks.py), and a study's Prolific pages under /studies/ (`study_urls`, in the
"annotation" namespace, mounted by annotation/mounting/urls/studies.py)."""

from django.urls import path

from annotation.prolific import views
from annotation.prolific.hooks import prolific_hook

app_name = "prolific"
urlpatterns = [path("hooks/", prolific_hook, name="hooks")]

study_urls = [
    path("<slug:slug>/prolific/bonuses/", views.prolific_bonuses, name="study_prolific_bonuses"),
    path("<slug:slug>/prolific/draft/", views.prolific_draft, name="prolific_draft"),
    path("<slug:slug>/prolific/sync/", views.prolific_sync, name="prolific_sync"),
    path("<slug:slug>/prolific/review/", views.prolific_review, name="prolific_review"),
    path("<slug:slug>/prolific/<str:action>/", views.prolific_transition, name="prolific_transition"),
]
