from django.apps import AppConfig


class EmbeddingsConfig(AppConfig):
    name = "h2e_site.embeddings"
    label = "embeddings"
    verbose_name = "Embeddings"

    def ready(self) -> None:
        from .job_types import register_job_types

        register_job_types()
