"""Closing one's account (the account page's "Delete my account"): what happens to the person and to their results.

- the person is gone: the login can no longer be used (its password unusable, the account inactive), the username
  and e-mail are replaced, every API token is revoked;
- never-published submissions are deleted with their files, results and logs (as the Delete button does);
- published submissions (listed, withdrawn or hidden) stay as they are, credited to "deleted account": their results
  were public and may be cited; a user who wants one off the leaderboards withdraws it first.

The user row itself stays (anonymous), because the published submissions' rows refer to it. Refused while any
evaluation of the user is queued or running (a worker may hold it): close the account once they finish.
Lives in the submissions app because it deletes submissions (accounts sits below it in the apps' order)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from leaderboard.accounts.models import ApiToken, Submitter
from leaderboard.accounts.services import NotAllowed
from leaderboard.jobs.models import EvaluationJob
from leaderboard.submissions.models import Submission

log = logging.getLogger(__name__)
DELETED_NAME = "deleted account"


def account_close(user) -> dict:
    """Close ``user``'s account as the module says; returns what was done (counts), for the page's message."""
    with transaction.atomic():
        submitter = Submitter.objects.select_for_update().filter(user=user).first()
        mine = Submission.objects.filter(submitter=submitter) if submitter else Submission.objects.none()
        if EvaluationJob.objects.filter(
            submission__in=mine, status__in=(EvaluationJob.QUEUED, EvaluationJob.RUNNING)
        ).exists():
            raise NotAllowed("some of your evaluations are queued or running: close the account once they finish")
        never_published = mine.filter(visibility="private", published_at__isnull=True)
        deleted = never_published.count()
        never_published.delete()
        kept = mine.count()
        if submitter is not None:
            ApiToken.objects.filter(submitter=submitter, revoked_at__isnull=True).update(revoked_at=timezone.now())
            submitter.display_name = DELETED_NAME
            submitter.save(update_fields=["display_name"])
        pk = user.pk
        user.username = f"deleted-{pk}"
        user.email = ""
        user.first_name = user.last_name = ""
        user.is_active = False
        user.set_unusable_password()
        user.save()
    log.info("account %s closed: %s submissions deleted, %s published kept", pk, deleted, kept)
    return {"deleted": deleted, "kept": kept}
