"""What Prolific calls: its webhooks (/prolific/hooks/, signed; annotation/prolific/hooks.py)."""

from django.urls import path

from annotation.prolific.hooks import prolific_hook

app_name = "prolific"
urlpatterns = [path("hooks/", prolific_hook, name="hooks")]
