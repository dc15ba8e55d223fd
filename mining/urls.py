"""The mining app's pages outside the admin: goal-step task sets (/tasks/...). Mounted at the root by
h2e_site/urls.py (the How2Mine funnel pages live under the mining run admin)."""

from django.urls import path

from .goal_step import views

app_name = "mining"

urlpatterns = [
    path("tasks/", views.task_sets_page, name="task_sets"),
    path("tasks/build/", views.task_set_build, name="task_set_build"),
    path("tasks/<slug:name>/", views.task_set_page, name="task_set"),
    path("tasks/<slug:name>/answer/", views.task_set_answer, name="task_set_answer"),
    path("tasks/<slug:name>/test.jsonl", views.task_set_test_jsonl, name="task_set_test_jsonl"),
    path("tasks/<slug:name>/train.jsonl", views.task_set_train_jsonl, name="task_set_train_jsonl"),
    path("tasks/<slug:name>/<str:task>.bigbench.json", views.task_set_bigbench, name="task_set_bigbench"),
]
