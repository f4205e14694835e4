"""Code shown with line numbers (the candidate's page): each line its own anchor, #L12, so a message that cites line
12 of a file can be followed to it.

    {% load code_tags %}
    {% for number, line in candidate.code|numbered_lines %} ... {% endfor %}
    {{ message|cite_lines:candidate_id }}    "line 4" in a message as a link to that line of the candidate's code
"""

import re

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()
LINE = re.compile(r"\bline (\d{1,6})\b")


@register.filter
def cite_lines(message: str, candidate_id) -> str:
    """The message escaped, each "line N" in it a link to line N of the candidate's code page (#LN)."""
    text = escape(message or "")
    if not candidate_id:
        return text
    page = reverse("candidate", args=[candidate_id])
    return mark_safe(LINE.sub(lambda m: f'<a href="{page}#L{m[1]}">line {m[1]}</a>', text))


@register.filter
def numbered_lines(code: str) -> list[tuple[int, str]]:
    return list(enumerate((code or "").splitlines() or [""], start=1))
