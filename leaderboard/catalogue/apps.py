from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    name = "leaderboard.catalogue"
    label = "catalogue"
    verbose_name = "pkb-arena catalogue"
    default_auto_field = "django.db.models.BigAutoField"
