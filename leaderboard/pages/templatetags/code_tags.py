"""Code shown with line numbers (the candidate's page): each line its own anchor, #L12, so a message that cites line
12 of a file can be followed to it.

    {% load code_tags %}
    {% for number, line in candidate.code|numbered_lines %} ... {% endfor %}
"""
from django import template

register = template.Library()


@register.filter
def numbered_lines(code: str) -> list[tuple[int, str]]:
    return list(enumerate((code or "").splitlines() or [""], start=1))
