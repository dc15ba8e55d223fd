"""The Celery app: JSON only, configured from Django settings (CELERY_*)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "h2e_site.settings")

app = Celery("h2e_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The annotation app's tasks live where its packages are mounted (annotation/mounting/tasks.py).
app.autodiscover_tasks(["annotation.mounting"])
