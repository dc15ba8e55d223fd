from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "How2Bench: generations, judges and How2Score"
