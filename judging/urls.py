from django.urls import path

from . import training_views, views
from .probes import views as probe_views
from .training import checkpoint_views
from .training import views as training_runs

app_name = "judging"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("leaderboard.csv", views.leaderboard_csv, name="leaderboard_csv"),
    path("leaderboard/topics/", views.topic_heatmap, name="topic_heatmap"),
    path("leaderboard/topics.csv", views.topic_heatmap_csv, name="topic_heatmap_csv"),
    path("judges/rank-correlation/", views.rank_correlation, name="rank_correlation"),
    path("compare/", views.compare_generators, name="compare"),
    path("compare/examples/<int:procedure_pk>/", views.compare_example, name="compare_example"),
    path("generators/<int:pk>/", views.generator_detail, name="generator_detail"),
    path("generators/<int:pk>/judge/", views.generator_judge, name="generator_judge"),
    path("training/how2train.jsonl", training_views.how2train_jsonl, name="how2train_jsonl"),
    path("training/runs/", training_runs.run_list, name="training_runs"),
    path("judges/<str:judge_id>/sft.jsonl", training_views.judge_sft_jsonl, name="judge_sft_jsonl"),
    # A run's name may hold a slash (a trainer names it): <path:>, each URL ending in its own word.
    path(
        "training/runs/<path:name>/checkpoints/",
        checkpoint_views.checkpoints_page,
        name="training_checkpoints",
    ),
    path(
        "training/runs/<path:name>/checkpoints/register/",
        checkpoint_views.checkpoint_register_view,
        name="training_checkpoint_register",
    ),
    path(
        "training/runs/<path:name>/checkpoints/ood/",
        checkpoint_views.ood_import_view,
        name="training_checkpoints_ood",
    ),
    path(
        "training/runs/<path:name>/checkpoints/jobs/",
        checkpoint_views.checkpoint_jobs_view,
        name="training_checkpoints_jobs",
    ),
    path("probes/", probe_views.probes_page, name="probes"),
    path("probes/start/", probe_views.probe_start, name="probe_start"),
    path("probes/<int:pk>/", probe_views.probe_detail, name="probe_detail"),
    # Last: a run's name may hold '/', so this <path:name> would also match the checkpoints' routes.
    path("training/runs/<path:name>/", training_runs.run_detail, name="training_run"),
]
