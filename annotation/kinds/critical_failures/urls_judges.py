"""A judge's report card (staff): /judges/<judge_id>/ (after judging's /judges/rank-correlation/)."""

from django.urls import path

from annotation.kinds.critical_failures import views_judges as views

app_name = "judges"
urlpatterns = [path("<str:judge_id>/", views.report_card_page, name="report_card")]
