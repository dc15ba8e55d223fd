from django.apps import AppConfig


class GoalStepConfig(AppConfig):
    name = "goal_step"
    label = "goal_step"
    verbose_name = "Goal-step tasks"

    def ready(self) -> None:
        from .job_types import register_job_types

        register_job_types()
