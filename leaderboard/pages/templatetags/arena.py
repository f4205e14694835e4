from django import template

from evaluator import schema

register = template.Library()

GOOD = {schema.CORRECT}
BAD = set(schema.CANDIDATE_FAULTS)


@register.filter
def status_class(status: str) -> str:
    if status in GOOD:
        return "ok"
    if status in BAD:
        return "bad"
    if status in ("pending", "queued", "running"):
        return "wait"
    return "none"


@register.filter
def label(value: str) -> str:
    return str(value or "").replace("_", " ")


@register.filter
def speedup(value) -> str:
    return "—" if value is None else f"{value:.2f}×"


@register.filter
def fixed2(value) -> str:
    return "—" if value is None else f"{value:.2f}"


@register.filter
def pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


@register.filter
def si(value, unit: str = "") -> str:
    """3 significant digits and an SI prefix, a space before the prefixed unit: "14.7 MB", "0 FLOP", "48 k"."""
    value = float(value or 0)
    for prefix in ("", "k", "M", "G", "T", "P", "E"):
        if abs(value) < 1000 or prefix == "E":
            return f"{value:.3g} {prefix}{unit}".strip()
        value /= 1000
    return ""


@register.filter
def plain(value) -> str:
    """Environment values: nested dicts and lists as compact JSON, empty ones as a dash."""
    import json

    if value in (None, "", [], {}):
        return "—"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "), default=str)
    return str(value)


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.simple_tag(takes_context=True)
def query(context, **changes) -> str:
    """The current query string with some parameters changed (empty value removes one); resets the page."""
    params = context["request"].GET.copy()
    params.pop("page", None)
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"
