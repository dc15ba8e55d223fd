"""The annotators' URLs (no account): /a/<study-slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=..."""

from django.urls import path

from annotation.flow.views import annotator as views

app_name = "annotator"
urlpatterns = [
    path("<slug:slug>/", views.entry, name="entry"),
    path("<slug:slug>/preview/", views.preview, name="preview"),
    path("<slug:slug>/consent/", views.consent, name="consent"),
    path("<slug:slug>/training/", views.training, name="training"),
    path("<slug:slug>/check/", views.comprehension, name="comprehension"),
    path("<slug:slug>/item/", views.item, name="item"),
    path("<slug:slug>/item/<int:pk>/goal/", views.acknowledge_goal, name="acknowledge_goal"),
    path("<slug:slug>/item/<int:pk>/steps/<int:number>/", views.reveal_step, name="reveal_step"),
    path("<slug:slug>/item/<int:pk>/submit/", views.submit, name="submit"),
    path("<slug:slug>/done/", views.done, name="done"),
]
