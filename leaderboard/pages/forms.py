"""The pages' forms: an upload's metadata, a new API token, sign-up, and one posted id."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from leaderboard.accounts.models import ApiToken
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.submissions.models import Submission
from leaderboard.validators import MAX_ID, AsciiIntegerField, check_paths, no_control_characters


class SubmitForm(forms.Form):
    """Metadata of an upload; the files themselves are read from request.FILES by the view."""

    model = forms.CharField(
        max_length=200, required=False, help_text="the model that wrote the kernels", validators=[no_control_characters]
    )
    agent = forms.CharField(max_length=200, required=False, label="Agent / harness", validators=[no_control_characters])
    agent_version = forms.CharField(max_length=100, required=False, validators=[no_control_characters])
    backend = forms.CharField(
        max_length=40,
        required=False,
        help_text="inferred from the file names if empty",
        validators=[no_control_characters],
    )
    protocol = forms.ChoiceField(choices=[("", "(from submission.json)")] + Submission.PROTOCOLS, required=False)
    attempts = AsciiIntegerField(min_value=1, max_value=10_000, required=False, label="Attempt budget k")
    selection = forms.ChoiceField(
        choices=[("", "(default for the protocol)")] + Submission.SELECTIONS, required=False, label="Selection rule"
    )
    profile = forms.ChoiceField(choices=(), required=False, label="Hardware profile")
    tokens = AsciiIntegerField(min_value=0, max_value=2**53, required=False, label="Tokens used (self-reported)")
    dollars = forms.DecimalField(
        min_value=0, max_digits=12, decimal_places=2, required=False, label="Dollars spent (self-reported)"
    )
    label = forms.CharField(
        max_length=200,
        required=False,
        validators=[no_control_characters],
        help_text="a short name for this run, shown beside the model",
    )
    notes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        max_length=5000,
        help_text="anything a reader should know (kept with the submission)",
    )
    publish = forms.BooleanField(required=False, help_text="list it on the leaderboard now (code becomes public)")
    # Rendered by the template as its own hidden input (site.js fills it); validated here.
    paths = forms.CharField(required=False, max_length=1_000_000, widget=forms.HiddenInput, validators=[check_paths])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["profile"].choices = [(p.slug, p.name) for p in HardwareProfile.objects.filter(accepting=True)]

    def metadata(self) -> dict:
        data = self.cleaned_data
        return {
            "model": data.get("model"),
            "agent": data.get("agent"),
            "agent_version": data.get("agent_version"),
            "backend": data.get("backend"),
            "protocol": data.get("protocol"),
            "attempts": data.get("attempts"),
            "selection": data.get("selection"),
            "profile": data.get("profile"),
            "tokens": data.get("tokens"),
            "dollars": data.get("dollars"),
            "label": data.get("label"),
            "notes": data.get("notes"),
        }


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[no_control_characters])
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ApiToken.SCOPES], initial=["read", "submit"], widget=forms.CheckboxSelectMultiple
    )
    days = AsciiIntegerField(min_value=1, max_value=366, initial=90, label="Lifetime (days)")


class SignupForm(UserCreationForm):
    """A username, a password and an e-mail address (optional: without one, a forgotten password cannot be reset)."""

    email = forms.EmailField(required=False, help_text="optional; needed to reset a forgotten password")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class IdForm(forms.Form):
    """One id posted by a page's form (a candidate to profile, a session to link; '#12' is taken for 12)."""

    id = AsciiIntegerField(min_value=1, max_value=MAX_ID)

    @classmethod
    def value(cls, raw) -> int | None:
        form = cls({"id": str(raw or "").strip().lstrip("#")})
        return form.cleaned_data["id"] if form.is_valid() else None


class AuditForm(forms.Form):
    """A staff audit from a submission's page: the whole submission (no problem) or one problem's result."""

    problem = AsciiIntegerField(
        min_value=1, max_value=10_000, required=False, help_text="a problem id; empty: the whole submission"
    )
    verdict = forms.ChoiceField(
        choices=[
            ("clean", "clean"),
            ("reward_hack", "reward hack"),
            ("rubric_leak", "rubric leak"),
            ("interesting", "interesting"),
        ]
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=4000)

    def __init__(self, *args, attempted: dict[int, str] | None = None, **kwargs):
        """``attempted``: {problem id: stem} the submission has candidates for (scoring.services.attempted_problems);
        a problem outside it is this form's error, naming them."""
        super().__init__(*args, **kwargs)
        self.attempted = attempted

    def clean_problem(self):
        problem = self.cleaned_data.get("problem")
        if problem is not None and self.attempted is not None and problem not in self.attempted:
            from leaderboard.scoring.services import problem_refusal

            raise forms.ValidationError(problem_refusal(problem, self.attempted))
        return problem
