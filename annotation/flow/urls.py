"""The flow's routes, as annotation/mounting/urls/ mounts them: the annotators' pages (/a/, no account), the
researcher's study pages (/studies/) and the agreement pages (/agreement/). Each kind's own routes come first
in those confs (annotation/kinds/<kind>/urls.py): these end in the catch-all `<slug:slug>/`."""

from django.urls import path

from annotation.flow.views import agreement, annotator, studies

# /a/<study-slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=... ("annotator" namespace)
annotator_urls = [
    path("<slug:slug>/", annotator.entry, name="entry"),
    path("<slug:slug>/preview/", annotator.preview, name="preview"),
    path("<slug:slug>/consent/", annotator.consent, name="consent"),
    path("<slug:slug>/training/", annotator.training, name="training"),
    path("<slug:slug>/check/", annotator.comprehension, name="comprehension"),
    path("<slug:slug>/item/", annotator.item, name="item"),
    path("<slug:slug>/item/<int:pk>/goal/", annotator.acknowledge_goal, name="acknowledge_goal"),
    path("<slug:slug>/item/<int:pk>/steps/<int:number>/", annotator.reveal_step, name="reveal_step"),
    path("<slug:slug>/item/<int:pk>/submit/", annotator.submit, name="submit"),
    path("<slug:slug>/done/", annotator.done, name="done"),
]

# /studies/ (staff; "annotation" namespace)
study_urls = [
    path("", studies.study_list, name="study_list"),
    path("new/", studies.study_create, name="study_create"),
    path("<slug:slug>/", studies.study_detail, name="study_detail"),
    path("<slug:slug>/open/", studies.study_toggle_open, name="study_toggle_open"),
    path("<slug:slug>/annotations.jsonl", studies.study_export_jsonl, name="study_export_jsonl"),
    path("<slug:slug>/annotations.csv", studies.study_export_csv, name="study_export_csv"),
]

# /agreement/, /agreement/<study>/, /agreement/<study>/judges/<judge_id>/ (staff; "agreement" namespace)
agreement_urls = [
    path("", agreement.agreement_overview, name="overview"),
    path("<slug:slug>/", agreement.study_agreement_page, name="study"),
    path("<slug:slug>/judges/<str:judge_id>/", agreement.judge_disagreements, name="judge_disagreements"),
]
