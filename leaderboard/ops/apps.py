from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "leaderboard.ops"
    label = "ops"
    verbose_name = "pkb-arena operations"
    default_auto_field = "django.db.models.BigAutoField"
