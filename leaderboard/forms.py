from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from leaderboard.models import ApiToken, HardwareProfile, Submission


class SubmitForm(forms.Form):
    """Metadata of an upload; the files themselves are read from request.FILES by the view."""

    model = forms.CharField(max_length=200, required=False, help_text="the model that wrote the kernels")
    agent = forms.CharField(max_length=200, required=False, label="Agent / harness")
    agent_version = forms.CharField(max_length=100, required=False)
    backend = forms.CharField(max_length=40, required=False, help_text="inferred from the file names if empty")
    protocol = forms.ChoiceField(choices=[("", "(from submission.json)")] + Submission.PROTOCOLS, required=False)
    attempts = forms.IntegerField(min_value=1, required=False, label="Attempt budget k")
    selection = forms.ChoiceField(choices=[("", "(default for the protocol)")] + Submission.SELECTIONS,
                                  required=False, label="Selection rule")
    profile = forms.ChoiceField(choices=(), required=False, label="Hardware profile")
    tokens = forms.IntegerField(min_value=0, required=False, label="Tokens used (self-reported)")
    dollars = forms.DecimalField(min_value=0, max_digits=12, decimal_places=2, required=False,
                                 label="Dollars spent (self-reported)")
    label = forms.CharField(max_length=200, required=False)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    publish = forms.BooleanField(required=False, help_text="list it on the leaderboard now (code becomes public)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["profile"].choices = [(p.slug, p.name) for p in HardwareProfile.objects.filter(accepting=True)]

    def metadata(self) -> dict:
        data = self.cleaned_data
        return {"model": data.get("model"), "agent": data.get("agent"), "agent_version": data.get("agent_version"),
                "backend": data.get("backend"), "protocol": data.get("protocol"), "attempts": data.get("attempts"),
                "selection": data.get("selection"), "profile": data.get("profile"), "tokens": data.get("tokens"),
                "dollars": data.get("dollars"), "label": data.get("label"), "notes": data.get("notes")}


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(choices=[(s, s) for s in ApiToken.SCOPES], initial=["read", "submit"],
                                       widget=forms.CheckboxSelectMultiple)
    days = forms.IntegerField(min_value=1, max_value=366, initial=90, label="Lifetime (days)")


class SignupForm(UserCreationForm):
    pass
