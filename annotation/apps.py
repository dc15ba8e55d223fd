from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation studies"

    def ready(self) -> None:
        from .job_types import register_job_types

        register_job_types()
