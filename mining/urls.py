"""The mining pages outside the admin (the "mine" namespace: "mining" names the goal-step pages' old URLs)."""

from django.urls import path

from . import views

app_name = "mine"

urlpatterns = [
    path("", views.mine_page, name="runs"),
    path("start/", views.mine_start, name="start"),
    path("runs/<int:pk>/", views.run_page, name="run"),
]
