from django.urls import path

from annotation.base.registry import KINDS
from annotation.flow.views import studies as views
from annotation.kinds.step_types import views_models as step_type_models
from annotation.prolific import views as prolific

app_name = "annotation"
urlpatterns = [
    path("", views.study_list, name="study_list"),
    path("new/", views.study_create, name="study_create"),
    path("<slug:slug>/", views.study_detail, name="study_detail"),
    path("<slug:slug>/open/", views.study_toggle_open, name="study_toggle_open"),
    path("<slug:slug>/prolific/bonuses/", prolific.prolific_bonuses, name="study_prolific_bonuses"),
    path("<slug:slug>/prolific/draft/", prolific.prolific_draft, name="prolific_draft"),
    path("<slug:slug>/prolific/sync/", prolific.prolific_sync, name="prolific_sync"),
    path("<slug:slug>/prolific/review/", prolific.prolific_review, name="prolific_review"),
    path("<slug:slug>/prolific/<str:action>/", prolific.prolific_transition, name="prolific_transition"),
    # The form in the kind's part of the page (critical failures: the calibration sample's next round).
    path("<slug:slug>/calibration-rounds/", views.study_page_post, name="study_calibration_round"),
    path("<slug:slug>/annotations.jsonl", views.study_export_jsonl, name="study_export_jsonl"),
    path("<slug:slug>/annotations.csv", views.study_export_csv, name="study_export_csv"),
    path("<slug:slug>/step-types/models/", step_type_models.step_type_models_page, name="step_type_models"),
    path(
        "<slug:slug>/step-types/models/classify/",
        step_type_models.step_type_models_classify,
        name="step_type_models_classify",
    ),
]
# Each kind's own pages of a study (its `page_urls`).
urlpatterns += [pattern for spec in KINDS.values() for pattern in spec.page_urls()]
