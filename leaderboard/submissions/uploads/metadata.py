"""The submission's metadata (submission.json or form fields), checked and normalised; the one protocol list."""

from __future__ import annotations

import re
import unicodedata

from leaderboard.submissions.uploads.layout import METADATA_FILE
from leaderboard.submissions.uploads.types import ParsedUpload, UploadError, UploadRejected

# The submission protocols (docs/site.md): the one list that models' choices, filters, plots and the API read.
ONE_SHOT, BEST_OF_K, AGENTIC = "one_shot", "best_of_k", "agentic_feedback"
PROTOCOLS = (ONE_SHOT, BEST_OF_K, AGENTIC)
SELECTIONS = ("first", "last", "best_measured", "self_selected")
DEFAULT_SELECTION = {"one_shot": "first", "best_of_k": "best_measured", "agentic_feedback": "last"}
PROTOCOL_ALIASES = {
    "one-shot": "one_shot",
    "oneshot": "one_shot",
    "best-of-k": "best_of_k",
    "agentic": "agentic_feedback",
    "agentic-feedback": "agentic_feedback",
}


# Where a missing value may be given: the form's field, pkb submit's flag, submission.json's key.
WHERE = {
    "model": "Model / --model",
    "protocol": "Protocol / --protocol",
    "attempts": "Attempt budget k / --attempts",
    "profile": "Hardware profile / --profile",
}
FIELDS = "(metadata)"  # the file an error names when a value came from the form or the command line


def clean_metadata(raw: dict, parsed: ParsedUpload, max_attempts: int, profiles: set[str]) -> dict:
    """Validated submission fields: explicit fields over submission.json; refuses missing or inconsistent ones.

    An error names submission.json only when the value came from it; a missing value names no file (none was
    missing a line) and says where to give it. One-shot means k = 1: an empty attempt budget is taken as 1."""
    given = {k: v for k, v in raw.items() if v not in (None, "")}
    merged = {**parsed.metadata, **given}
    errors: list[UploadError] = []

    def source(key: str) -> str:
        return METADATA_FILE if key in parsed.metadata and key not in given else FIELDS

    def need(key: str, label: str):
        value = merged.get(key)
        if value in (None, ""):
            errors.append(
                UploadError(
                    FIELDS,
                    "missing_metadata",
                    f'missing {label}: give it as {WHERE[key]}, or as "{key}" in {METADATA_FILE}',
                )
            )
        return value

    need("model", "the model")  # checked here; read with the other text fields below
    protocol = need("protocol", "the protocol (one_shot, best_of_k or agentic_feedback)")
    protocol = PROTOCOL_ALIASES.get(str(protocol).strip().lower(), str(protocol).strip().lower()) if protocol else None
    if protocol == ONE_SHOT and merged.get("attempts") in (None, ""):
        merged["attempts"] = 1  # one-shot means k = 1
    attempts = need("attempts", "the attempt budget k")
    profile = need("profile", "the hardware profile")
    if errors:
        raise UploadRejected(errors)

    if protocol not in PROTOCOLS:
        errors.append(
            UploadError(source("protocol"), "bad_metadata", f"protocol {protocol!r} is not one of {PROTOCOLS}")
        )
    k = _int(attempts, "attempts", errors, minimum=1)
    if k is not None and k > max_attempts:
        errors.append(
            UploadError(source("attempts"), "bad_metadata", f"attempts {k} exceeds the site's limit {max_attempts}")
        )
    if protocol == "one_shot" and k not in (None, 1):
        errors.append(UploadError(source("attempts"), "bad_metadata", "one_shot means attempts = 1"))
    if parsed.transcripts and protocol == ONE_SHOT:
        errors.append(
            UploadError(
                parsed.transcripts[0].path,
                "bad_transcript",
                "agent transcripts go with agentic or best-of-k submissions, not one-shot ones",
            )
        )
    if str(profile) not in profiles:
        errors.append(
            UploadError(
                source("profile"),
                "unknown_profile",
                f"profile {profile!r} is not open; choose one of {sorted(profiles)}",
            )
        )
    if k is not None:
        for f in parsed.files:
            if f.attempt > k:
                errors.append(UploadError(f.path, "over_budget", f"attempt {f.attempt} exceeds the budget k = {k}"))
    selection = str(merged.get("selection") or DEFAULT_SELECTION.get(protocol, "first"))
    if selection not in SELECTIONS:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"selection {selection!r} is not one of {SELECTIONS}"))
    backend = _backend(merged.get("backend"), parsed, errors)
    tokens = _int(merged.get("tokens"), "tokens", errors, minimum=0) if merged.get("tokens") not in (None, "") else None
    dollars = _dollars(merged.get("dollars"), errors)
    text = {
        key: _text(merged.get(key), key, errors, multiline=key == "notes")
        for key in ("model", "agent", "agent_version", "label", "notes")
    }
    if errors:
        raise UploadRejected(errors)
    return {
        "model_name": text["model"][:200],
        "protocol": protocol,
        "attempts_k": k,
        "profile": str(profile),
        "selection_rule": selection,
        "backend": backend,
        "agent": text["agent"][:200],
        "agent_version": text["agent_version"][:100],
        "label": text["label"][:200],
        "notes": text["notes"][:5000],
        "reported_tokens": tokens,
        "reported_dollars": dollars,
    }


def _text(value, label: str, errors: list[UploadError], multiline: bool = False) -> str:
    """A metadata string without NUL or other control characters (PostgreSQL refuses NUL in text; the rest only
    hides things on pages); notes may hold newlines and tabs. Strings only: a JSON list or object is refused."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be a string"))
        return ""
    value = str(value)
    allowed = "\n\r\t" if multiline else ""
    if any(unicodedata.category(c) == "Cc" and c not in allowed for c in value):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} contains control characters"))
        return ""
    return value


MAX_INT = 2**53  # well inside PostgreSQL's bigint and exact in a JSON double


def _int(value, label: str, errors: list[UploadError], minimum: int = 0, maximum: int = MAX_INT) -> int | None:
    """ASCII digits only (int() also takes '٣' and ' 3 '), inside [minimum, maximum]; booleans are no integers."""
    text = str(value).strip() if not isinstance(value, (bool, float)) else ""
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    if not re.fullmatch(r"[+-]?[0-9]{1,20}", text):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be an integer, not {value!r}"[:300]))
        return None
    number = int(text)
    if number < minimum or number > maximum:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be between {minimum} and {maximum}"))
        return None
    return number


def _dollars(value, errors: list[UploadError]):
    if value in (None, ""):
        return None
    from decimal import Decimal, InvalidOperation

    try:
        amount = Decimal(str(value).strip()[:40])
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():  # NaN and Infinity parse, then fail every comparison
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"dollars must be a number, not {value!r}"[:300]))
        return None
    if amount < 0 or amount >= Decimal("1e10"):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", "dollars must be between 0 and 1e10"))
        return None
    return amount.quantize(Decimal("0.01"))


def _backend(declared, parsed: ParsedUpload, errors: list[UploadError]) -> str:
    found = parsed.backends
    if declared in (None, ""):
        if len(found) > 1:
            errors.append(
                UploadError(
                    "(upload)", "mixed_backends", f"files use several backends {sorted(found)}; declare backend=mixed"
                )
            )
            return ""
        return next(iter(found), "")
    declared = str(declared).strip().lower()
    if declared == "mixed":
        return declared
    for f in parsed.files:
        if f.backend != declared:
            errors.append(
                UploadError(
                    f.path, "backend_mismatch", f"backend {f.backend!r} but the submission declares {declared!r}"
                )
            )
    return declared
