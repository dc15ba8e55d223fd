from importlib import import_module

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation studies"

    def import_models(self) -> None:
        """The engine's tables (annotation/base/models.py is the app's models module), then the kind registry,
        whose folders define their own tables (annotation/kinds/), then the operations' tables (Prolific's,
        the failure patterns'). By name: Django imports apps.py while it fills the app registry."""
        super().import_models()  # no annotation.models module: the tables live in the packages below
        self.models_module = import_module(f"{self.name}.base.models")
        import_module(f"{self.name}.kinds").load()
        import_module(f"{self.name}.prolific.models")
        import_module(f"{self.name}.failures.meaning.models")

    def ready(self) -> None:
        from annotation.mounting.ready import ready

        ready()
