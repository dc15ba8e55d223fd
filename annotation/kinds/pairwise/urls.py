"""The pairwise kind's routes, each list read by the spec's hook of the same name when the URL conf is built
(annotation/base/spec.py; annotation/mounting/urls/ mounts every kind's): page_urls, under /studies/
("annotation" namespace): the study's LLM twin (views.py); api_urls, under /api/: the study's figures
(api.py)."""

from django.urls import path

from annotation.kinds.pairwise import views
from annotation.kinds.pairwise.api import PairwiseFiguresView

page_urls = [
    path("<slug:slug>/pairwise/judge/", views.pairwise_judge, name="pairwise_judge"),
    path("<slug:slug>/pairwise/attach-config/", views.pairwise_attach_config, name="pairwise_attach_config"),
]

api_urls = [
    path("studies/<slug:slug>/pairwise/", PairwiseFiguresView.as_view(), name="pairwise-figures-api"),
]
