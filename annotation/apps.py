from importlib import import_module

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation studies"

    def import_models(self) -> None:
        """The engine's models, then the kind registry: a kind's module may define its own tables (the
        pairwise kind's pair of generations), which must exist with the app's models; then the failure
        patterns' tables (annotation/failure_meaning/models.py)."""
        super().import_models()
        import_module(f"{self.name}.kinds")
        import_module(f"{self.name}.failure_meaning.models")

    def ready(self) -> None:
        from goal_step.human_labels import HumanLabels, human_labels_register

        from annotation.embedding import register_text_sources
        from annotation.goal_step.validation import task_set_validated_pks
        from annotation.job_types import register_job_types
        from annotation.step_types.ordering import ordered_from_step_types

        register_job_types()
        register_text_sources()
        # The one seam through which the goal-step app (a layer below) reads what people said: a task set's
        # validated test examples (its multiple-choice studies) and, where Procedure.ordered is empty,
        # whether a procedure's order matters (the step-types studies' labels). goal_step/human_labels.py.
        human_labels_register(HumanLabels(validated=task_set_validated_pks, ordered=ordered_from_step_types))
