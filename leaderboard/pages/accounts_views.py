"""The account's own pages beside Django's password views (routed in leaderboard/urls.py): closing the account, and
revoking a token once asked. Password change and reset are Django's views with the site's templates
(templates/registration/); the reset e-mail goes through the configured backend (the console by default)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import NotAllowed
from leaderboard.submissions import closing
from leaderboard.submissions.models import Submission


@require_POST
@login_required
def token_revoke(request, pk):
    """Revoke one of your tokens: the form's box must be ticked (a revoked token cannot be restored)."""
    token = get_object_or_404(ApiToken, pk=pk, submitter__user=request.user)
    if request.POST.get("confirm") != "yes":
        messages.error(request, f"Token {token.name} not revoked: tick the box to confirm (it cannot be undone).")
        return redirect("account")
    accounts_services.token_revoke(token)
    messages.success(request, f"Token {token.name} revoked: requests with it are refused from now on.")
    return redirect("account")


@login_required
def account_delete(request):
    mine = Submission.objects.filter(submitter__user=request.user)
    published = mine.exclude(visibility="private", published_at__isnull=True).count()
    context = {
        "unpublished": mine.count() - published,
        "published": published,
        "deleted_name": closing.DELETED_NAME,
        "error": None,
    }
    if request.method == "POST":
        if request.POST.get("confirm") != "yes" or not request.user.check_password(request.POST.get("password", "")):
            context["error"] = "Not closed: tick the box and give your current password."
        else:
            try:
                done = closing.account_close(request.user)
            except NotAllowed as refused:
                context["error"] = f"Not closed: {refused}."
            else:
                logout(request)
                messages.success(
                    request,
                    f"Your account is closed: {done['deleted']} unpublished submission(s) "
                    f"deleted, {done['kept']} published one(s) kept under "
                    f"“{closing.DELETED_NAME}”.",
                )
                return redirect("home")
    return render(request, "registration/account_delete.html", context, status=400 if context["error"] else 200)
