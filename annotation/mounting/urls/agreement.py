"""Agreement pages (staff): /agreement/, /agreement/<study>/, /agreement/<study>/judges/<judge_id>/; step
types: /agreement/step-types/label-sets/[<name>/], a classifier's predictions."""

from django.urls import path

from annotation.flow.views import agreement as views
from annotation.kinds.multiple_choice import views as goal_step
from annotation.kinds.step_types import views as step_types

app_name = "agreement"
urlpatterns = [
    # Step types (before "<slug>/": none of these is a study's page).
    path("step-types/label-sets/", step_types.label_set_list, name="step_types_label_sets"),
    path("step-types/label-sets/<slug:name>/", step_types.label_set_page, name="step_types_label_set"),
    path(
        "step-types/classifiers/<str:classifier_id>/predictions.jsonl",
        step_types.predictions_jsonl,
        name="step_types_predictions_jsonl",
    ),
    path(
        "step-types/classifiers/<str:classifier_id>/predictions.csv",
        step_types.predictions_csv,
        name="step_types_predictions_csv",
    ),
    path("", views.agreement_overview, name="overview"),
    path("<slug:slug>/validated.jsonl", goal_step.validated_jsonl, name="mc_validated"),
    path("<slug:slug>/", views.study_agreement_page, name="study"),
    path("<slug:slug>/judges/<str:judge_id>/", views.judge_disagreements, name="judge_disagreements"),
]
