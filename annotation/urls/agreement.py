"""Agreement pages (staff): /agreement/, /agreement/<study>/, /agreement/<study>/judges/<judge_id>/"""

from django.urls import path

from ..views import agreement as views

app_name = "agreement"
urlpatterns = [
    path("", views.agreement_overview, name="overview"),
    path("<slug:slug>/", views.study_agreement_page, name="study"),
    path("<slug:slug>/judges/<str:judge_id>/", views.judge_disagreements, name="judge_disagreements"),
]
