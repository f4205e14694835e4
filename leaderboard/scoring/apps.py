from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "leaderboard.scoring"
    label = "scoring"
    verbose_name = "pkb-arena scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The apps below scoring announce what changed (they never import it): the scores and rows follow.
        from leaderboard.feedback.signals import feedback_changed
        from leaderboard.jobs.signals import results_changed
        from leaderboard.scoring import services
        from leaderboard.submissions.signals import entry_stale, listing_changed, scores_stale

        results_changed.connect(services.on_results_changed, dispatch_uid="scoring.results_changed")
        scores_stale.connect(services.on_scores_stale, dispatch_uid="scoring.scores_stale")
        listing_changed.connect(services.on_listing_changed, dispatch_uid="scoring.listing_changed")
        entry_stale.connect(services.on_entry_stale, dispatch_uid="scoring.entry_stale")
        feedback_changed.connect(services.on_feedback_changed, dispatch_uid="scoring.feedback_changed")
