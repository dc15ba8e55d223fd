from django.apps import AppConfig


class MiningConfig(AppConfig):
    name = "mining"
    verbose_name = "How2Mine: topics and procedures"
