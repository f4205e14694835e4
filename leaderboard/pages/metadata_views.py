"""The owner's form that corrects a submission's self-reported metadata (/submissions/<id>/metadata): the same
service as ``PATCH /api/v1/submissions/<id>/`` (leaderboard/submissions/metadata.py), each change recorded and shown
on the submission's page."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render

from leaderboard.submissions import metadata
from leaderboard.submissions import selectors as submissions_selectors
from leaderboard.validators import AsciiIntegerField, no_control_characters


class MetadataForm(forms.Form):
    model = forms.CharField(max_length=200, label="Model", validators=[no_control_characters])
    agent = forms.CharField(max_length=200, required=False, label="Agent / harness", validators=[no_control_characters])
    agent_version = forms.CharField(
        max_length=100, required=False, label="Agent version", validators=[no_control_characters]
    )
    label = forms.CharField(max_length=200, required=False, validators=[no_control_characters])
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False, max_length=5000)
    tokens = AsciiIntegerField(min_value=0, max_value=2**53, required=False, label="Tokens used (self-reported)")
    dollars = forms.DecimalField(
        min_value=0, max_digits=12, decimal_places=2, required=False, label="Dollars spent (self-reported)"
    )


@login_required
def submission_metadata(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    if not metadata.editable_by(submission, request.user):
        raise Http404("no such submission of yours")  # not the owner's: as if it did not exist for editing
    form = MetadataForm(request.POST or None, initial=metadata.current(submission))
    if request.method == "POST" and form.is_valid():
        try:
            change = metadata.metadata_update(submission, request.user, form.cleaned_data)
        except metadata.MetadataRefused as refused:
            for field, message in refused.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(
                request,
                "Metadata corrected: " + ", ".join(change.changes) + " (recorded on the page)"
                if change
                else "Nothing changed.",
            )
            return redirect(submission.get_absolute_url())
    return render(
        request,
        "leaderboard/submission_metadata.html",
        {
            "submission": submission,
            "form": form,
            "history": metadata.history(submission),
            "is_owner": submission.is_owner(request.user),
        },
    )
