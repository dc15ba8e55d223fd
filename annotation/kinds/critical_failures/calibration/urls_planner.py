"""The budget planner (staff): /calibration/plan/"""

from django.urls import path

from annotation.kinds.critical_failures.calibration import views_planner as views

app_name = "planner"
urlpatterns = [path("", views.plan_page, name="plan")]
