from importlib import import_module

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation studies"

    def import_models(self) -> None:
        """The engine's models, then the kind registry: a kind's module may define its own tables (the
        pairwise kind's pair of generations), which must exist with the app's models."""
        super().import_models()
        import_module(f"{self.name}.kinds")

    def ready(self) -> None:
        from mining.goal_step.exports import validation_source_register
        from mining.goal_step.jobs import order_source_register

        from .goal_step.validation import task_set_validated_pks
        from .job_types import register_job_types
        from .step_types.ordering import ordered_from_step_types

        register_job_types()
        # A task set's validated test examples come from its multiple-choice studies (the layer above).
        validation_source_register(task_set_validated_pks)
        # Whether a procedure's order matters, where its field is empty: the step-types studies' labels.
        order_source_register(ordered_from_step_types)
