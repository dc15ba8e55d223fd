from django.urls import path

from . import views

app_name = "judging"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("leaderboard.csv", views.leaderboard_csv, name="leaderboard_csv"),
    path("leaderboard/topics/", views.topic_heatmap, name="topic_heatmap"),
    path("leaderboard/topics.csv", views.topic_heatmap_csv, name="topic_heatmap_csv"),
    path("judges/rank-correlation/", views.rank_correlation, name="rank_correlation"),
    path("failures/", views.failure_list, name="failure_list"),
    path("generators/<int:pk>/", views.generator_detail, name="generator_detail"),
    path("generations/<int:pk>/", views.generation_detail, name="generation_detail"),
    path("jobs/", views.job_list, name="job_list"),
    path("jobs/<int:pk>/", views.job_detail, name="job_detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job_cancel"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job_retry"),
]
