from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "leaderboard.scoring"
    label = "scoring"
    verbose_name = "pkb-arena scoring"
    default_auto_field = "django.db.models.BigAutoField"
