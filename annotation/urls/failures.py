"""Pages that read judge and human failures together (staff): /failures/, /generations/<pk>/"""

from django.urls import path

from ..views import failures as views

app_name = "failures"
urlpatterns = [
    path("failures/", views.failure_list, name="failure_list"),
    path("failures.csv", views.failure_list_csv, name="failure_list_csv"),
    path("generations/<int:pk>/", views.generation_detail, name="generation_detail"),
]
