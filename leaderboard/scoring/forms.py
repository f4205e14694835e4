"""The query string of the public pages and of the API's reads, checked by a form (scoring/selectors.py,
query_clean)."""

from __future__ import annotations

from django import forms

from leaderboard.submissions.models import Submission
from leaderboard.validators import MAX_ID, AsciiIntegerField, no_control_characters


class QueryForm(forms.Form):
    """The query string of the public pages (leaderboard, problems, one problem) and of the API's reads. Each value
    is checked here; a bad one answers 400 with this form's message instead of being parsed by hand."""

    profile = forms.SlugField(max_length=50, required=False)
    protocol = forms.ChoiceField(choices=[("", "all")] + Submission.PROTOCOLS, required=False)
    backend = forms.CharField(max_length=40, required=False, validators=[no_control_characters])
    k = AsciiIntegerField(min_value=1, max_value=10_000, required=False)
    sort = forms.CharField(max_length=20, required=False)  # checked against selectors.SORTS by Filters
    page = AsciiIntegerField(min_value=1, max_value=1_000_000, required=False)
    submission = AsciiIntegerField(min_value=1, max_value=MAX_ID, required=False)  # /audits/?submission=
    format = forms.ChoiceField(choices=[("", "html"), ("csv", "csv"), ("json", "json")], required=False)
