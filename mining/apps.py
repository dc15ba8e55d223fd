from django.apps import AppConfig


class MiningConfig(AppConfig):
    name = "mining"
    verbose_name = "How2Mine: topics and procedures"

    def ready(self) -> None:
        from .embedding import register_text_sources
        from .job_types import register_job_types

        register_job_types()
        register_text_sources()
