"""The step-types kind's routes, each list read by the spec's hook of the same name when the URL conf is
built (annotation/base/spec.py; annotation/mounting/urls/ mounts every kind's):

- page_urls, under /studies/ ("annotation" namespace): a study's step-type models (F1) and classifying;
- agreement_urls, under /agreement/ ("agreement" namespace, before the flow's `<slug>/`: none of these is a
  study's page): imported label sets and a classifier's predictions;
- api_urls, under /api/: a study's or a label set's Table 6 figures (agreement_api.py);
- api_routes, under /api/ in the "api" namespace: the models page's figures (classify_api.py).
"""

from django.urls import path

from annotation.kinds.step_types import views, views_models
from annotation.kinds.step_types.agreement_api import StepTypesAgreementView
from annotation.kinds.step_types.classify_api import StepTypeModelsView
from annotation.kinds.step_types.name import AGREEMENT_API

page_urls = [
    path("<slug:slug>/step-types/models/", views_models.step_type_models_page, name="step_type_models"),
    path(
        "<slug:slug>/step-types/models/classify/",
        views_models.step_type_models_classify,
        name="step_type_models_classify",
    ),
]

agreement_urls = [
    path("step-types/label-sets/", views.label_set_list, name="step_types_label_sets"),
    path("step-types/label-sets/<slug:name>/", views.label_set_page, name="step_types_label_set"),
    path(
        "step-types/classifiers/<str:classifier_id>/predictions.jsonl",
        views.predictions_jsonl,
        name="step_types_predictions_jsonl",
    ),
    path(
        "step-types/classifiers/<str:classifier_id>/predictions.csv",
        views.predictions_csv,
        name="step_types_predictions_csv",
    ),
]

api_urls = [path("agreement/step-types/", StepTypesAgreementView.as_view(), name=AGREEMENT_API)]

api_routes = [
    path(
        "studies/<slug:slug>/step-types/models/", StepTypeModelsView.as_view(), name="study-step-type-models"
    ),
]
