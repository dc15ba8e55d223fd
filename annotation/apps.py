from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation studies"

    def ready(self) -> None:
        from mining.goal_step.exports import validation_source_register

        from .goal_step.validation import task_set_validated_pks
        from .job_types import register_job_types

        register_job_types()
        # A task set's validated test examples come from its multiple-choice studies (the layer above).
        validation_source_register(task_set_validated_pks)
