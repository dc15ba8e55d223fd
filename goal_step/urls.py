"""The goal-step app's pages outside the admin: task sets (/tasks/...). Mounted at the root by
h2e_site/urls.py, which also mounts them under their names of before the move (mining:task_set, ...)."""

from django.urls import path

from . import views

app_name = "goal_step"

urlpatterns = [
    path("tasks/", views.task_sets_page, name="task_sets"),
    path("tasks/build/", views.task_set_build, name="task_set_build"),
    path("tasks/<slug:name>/", views.task_set_page, name="task_set"),
    path("tasks/<slug:name>/answer/", views.task_set_answer, name="task_set_answer"),
    path("tasks/<slug:name>/test.jsonl", views.task_set_test_jsonl, name="task_set_test_jsonl"),
    path("tasks/<slug:name>/train.jsonl", views.task_set_train_jsonl, name="task_set_train_jsonl"),
    path("tasks/<slug:name>/<str:task>.bigbench.json", views.task_set_bigbench, name="task_set_bigbench"),
]
