"""The Celery app: JSON only, configured from Django settings (CELERY_*)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "h2e_site.settings")

app = Celery("h2e_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
