"""The calibrated leaderboard (staff): /leaderboard/calibrated/ and one generator's topics under it."""

from django.urls import path

from annotation.kinds.critical_failures.calibration import views_calibrated as views

app_name = "calibrated"
urlpatterns = [
    path("", views.calibrated_leaderboard, name="leaderboard"),
    path("<str:generator_id>/", views.calibrated_generator, name="generator"),
]
