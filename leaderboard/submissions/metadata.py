"""Correcting a submission's self-reported metadata after the upload (the owner, or staff): the model, agent, label,
notes and self-reported cost, each change recorded (MetadataChange) and shown on the submission's page. What was
judged cannot change: the protocol, k, the profile and the files make a different submission (see LOCKED_MESSAGE).
Used by the page's form (pages/metadata_views.py) and ``PATCH /api/v1/submissions/<id>/`` (api/metadata.py)."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from leaderboard.accounts.services import NotAllowed
from leaderboard.submissions.models import MetadataChange, Submission
from leaderboard.submissions.uploads import metadata as upload_metadata
from leaderboard.submissions.uploads.types import UploadError

# The fields one may correct: the request's name -> (the model's field, the upload's cleaning, the stored maximum).
EDITABLE = {
    "model": "model_name",
    "agent": "agent",
    "agent_version": "agent_version",
    "label": "label",
    "notes": "notes",
    "tokens": "reported_tokens",
    "dollars": "reported_dollars",
}
TEXT_LIMITS = {"model_name": 200, "agent": 200, "agent_version": 100, "label": 200, "notes": 5000}
# What was judged: named in a request (as the upload names them, or as the API returns them), it is refused.
LOCKED = (
    "protocol",
    "attempts",
    "attempts_k",
    "k",
    "profile",
    "files",
    "archive",
    "backend",
    "selection",
    "selection_rule",
    "feedback_for",
)
LOCKED_MESSAGE = (
    "{field} cannot change once a submission is judged: with another value it is a new submission. "
    "Upload the files again with the new value; the duplicate rule refuses files identical to a "
    "submission of yours on the same profile, so delete this one first (possible while it was never "
    "published), or change a file."
)


class MetadataRefused(ValueError):
    """A correction refused, with one message per field (what the form and the API show)."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def editable_by(submission: Submission, user) -> bool:
    return bool(submission.is_owner(user) or (user and user.is_authenticated and user.is_staff))


def current(submission: Submission) -> dict:
    """The correctable fields as the request names them (the form's initial values)."""
    return {name: getattr(submission, field) for name, field in EDITABLE.items()}


def _cleaned(raw: dict) -> tuple[dict, dict]:
    """The model's values for the given fields, and the errors (field -> message)."""
    errors: dict[str, str] = {}
    values = {}
    for name in raw:
        if name in LOCKED:
            errors[name] = LOCKED_MESSAGE.format(field=name)
        elif name not in EDITABLE:
            errors[name] = f"not a field of a submission's metadata; one may correct {', '.join(EDITABLE)}"
    for name, field in EDITABLE.items():
        if name not in raw:
            continue
        found: list[UploadError] = []
        value = raw[name]
        if name == "tokens":
            value = None if value in (None, "") else upload_metadata._int(value, "tokens", found, minimum=0)
        elif name == "dollars":
            value = upload_metadata._dollars(value, found)
        else:
            value = upload_metadata._text(value, name, found, multiline=name == "notes")
            if len(value) > TEXT_LIMITS[field]:
                found.append(UploadError("", "bad_metadata", f"at most {TEXT_LIMITS[field]} characters"))
            if name == "model" and not value.strip():
                found.append(UploadError("", "bad_metadata", "the model cannot be empty"))
        if found:
            errors[name] = found[0].message
        values[field] = value
    return values, errors


def _shown(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return f"{value:.2f}"
    return str(value)


def metadata_update(submission: Submission, user, raw: dict) -> MetadataChange | None:
    """Correct the given fields (request names: model, agent, agent_version, label, notes, tokens, dollars). Raises
    NotAllowed for anyone but the owner and staff, MetadataRefused naming each bad or locked field; records one
    MetadataChange of the fields whose value changed (None when nothing did)."""
    if not editable_by(submission, user):
        raise NotAllowed("only the owner corrects a submission's metadata")
    values, errors = _cleaned(raw)
    if errors:
        raise MetadataRefused(errors)
    changes = {}
    for field, value in values.items():
        old = getattr(submission, field)
        if _shown(old) != _shown(value):
            changes[field] = [_shown(old), _shown(value)]
            setattr(submission, field, value)
    if not changes:
        return None
    with transaction.atomic():
        submission.save(update_fields=list(changes))
        change = MetadataChange.objects.create(submission=submission, changed_by=user, changes=changes)
    return change


def history(submission: Submission) -> list[MetadataChange]:
    return list(submission.metadata_changes.select_related("changed_by"))
