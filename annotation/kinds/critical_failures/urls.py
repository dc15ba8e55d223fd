"""The critical-failures kind's routes, each list read by the spec's hook of the same name when the URL conf
is built (annotation/base/spec.py; annotation/mounting/urls/ mounts every kind's):

- page_urls, under /studies/ ("annotation" namespace): the calibration sample's next round (the form in the
  kind's part of the study page), adjudication and the gold exports;
- api_urls, under /api/: a judge's report card, the agreement API, the gold API;
- api_routes, under /api/ in the "api" namespace: the calibrated leaderboard, the budget planner, a
  calibration study's next round;
- site_urls, the kind's own pages at the site's root: the budget planner (/calibration/plan/) and the
  calibrated leaderboard (/leaderboard/calibrated/, before judging's /leaderboard/ routes);
- site_urls_after_apps: a judge's report card page (/judges/<judge_id>/, after judging's
  /judges/rank-correlation/).
"""

from django.urls import include, path

from annotation.flow.views.studies import study_page_post
from annotation.kinds.critical_failures import views_adjudication as adjudication
from annotation.kinds.critical_failures.api import AGREEMENT_API, AgreementView
from annotation.kinds.critical_failures.calibration.api import (
    CalibratedLeaderboardView,
    CalibrationRoundView,
    PlanView,
)
from annotation.kinds.critical_failures.gold_api import GoldEventsView, GoldView
from annotation.kinds.critical_failures.report_card_api import JudgeReportCardView

page_urls = [
    # The flow's view asks the study's kind (a study of a kind without a form there: a 404 saying so).
    path("<slug:slug>/calibration-rounds/", study_page_post, name="study_calibration_round"),
    path("<slug:slug>/adjudication/", adjudication.adjudication_queue, name="adjudication_queue"),
    path("<slug:slug>/adjudication/<int:item_id>/", adjudication.adjudicate, name="adjudicate"),
    path(
        "<slug:slug>/adjudication/<int:item_id>/undo/<int:event_id>/",
        adjudication.gold_undo,
        name="gold_undo",
    ),
    path("<slug:slug>/gold.jsonl", adjudication.gold_jsonl, name="gold_jsonl"),
    path("<slug:slug>/gold.csv", adjudication.gold_csv, name="gold_csv"),
    path("<slug:slug>/gold-events.jsonl", adjudication.gold_events_jsonl, name="gold_events_jsonl"),
]

api_urls = [
    path("judges/<str:judge_id>/report-card/", JudgeReportCardView.as_view(), name="judge-report-card-api"),
    path("agreement/", AgreementView.as_view(), name=AGREEMENT_API),
    path("studies/<slug:slug>/gold/", GoldView.as_view(), name="gold-api"),
    path("studies/<slug:slug>/gold/events/", GoldEventsView.as_view(), name="gold-events-api"),
]

api_routes = [
    path("leaderboard/calibrated/", CalibratedLeaderboardView.as_view(), name="calibrated-leaderboard"),
    path("calibration/plan/", PlanView.as_view(), name="calibration-plan"),
    path(
        "studies/<slug:slug>/calibration-rounds/",
        CalibrationRoundView.as_view(),
        name="study-calibration-rounds",
    ),
]

site_urls = [
    path("calibration/plan/", include("annotation.kinds.critical_failures.calibration.urls_planner")),
    path(
        "leaderboard/calibrated/", include("annotation.kinds.critical_failures.calibration.urls_calibrated")
    ),
]

site_urls_after_apps = [path("judges/", include("annotation.kinds.critical_failures.urls_judges"))]
