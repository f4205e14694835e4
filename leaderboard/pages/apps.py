from django.apps import AppConfig


class PagesConfig(AppConfig):
    name = "leaderboard.pages"
    label = "pages"
    verbose_name = "pkb-arena pages"
    default_auto_field = "django.db.models.BigAutoField"
