"""The annotators' URLs (no account): /a/<study-slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=..."""

from annotation.flow.urls import annotator_urls

app_name = "annotator"
urlpatterns = annotator_urls
