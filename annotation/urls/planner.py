"""The budget planner (staff): /calibration/plan/"""

from django.urls import path

from annotation.views import planner as views

app_name = "planner"
urlpatterns = [path("", views.plan_page, name="plan")]
