"""The multiple-choice kind's routes, each list read by the spec's hook of the same name when the URL conf
is built (annotation/base/spec.py; annotation/mounting/urls/ mounts every kind's): agreement_urls, under
/agreement/ ("agreement" namespace): a study's validated test examples as JSONL."""

from django.urls import path

from annotation.kinds.multiple_choice import views

agreement_urls = [path("<slug:slug>/validated.jsonl", views.validated_jsonl, name="mc_validated")]
