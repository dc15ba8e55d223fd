from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "h2e_site.jobs"
    label = "jobs"
    verbose_name = "Jobs"
