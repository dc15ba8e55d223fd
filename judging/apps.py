from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "How2Bench: generations, judges and How2Score"

    def ready(self) -> None:
        from .embedding import register_text_sources
        from .job_types import register_job_types

        register_job_types()
        register_text_sources()
