"""Reads of the catalogue: profiles and problems by the keys URLs carry."""

from __future__ import annotations

import re

from django.conf import settings
from django.http import Http404

from leaderboard.catalogue.converters import ProblemKeyConverter
from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.validators import BadQuery

SLUG = re.compile(r"[-a-zA-Z0-9_]{1,50}")
PROBLEM_KEY = re.compile(ProblemKeyConverter.regex)


def profiles() -> list[HardwareProfile]:
    return list(HardwareProfile.objects.all())


def profile_get(slug: str | None) -> HardwareProfile:
    slug = slug or settings.PKB_DEFAULT_PROFILE
    if not SLUG.fullmatch(str(slug)):
        raise BadQuery({"profile": ["a hardware profile slug: ASCII letters, digits, '-' and '_'"]})
    profile = HardwareProfile.objects.filter(slug=slug).first()
    if profile is None:
        raise Http404(f"no hardware profile {slug!r}")
    return profile


def problem_get(key: str) -> Problem:
    text = str(key)
    if not PROBLEM_KEY.fullmatch(text):  # what leaderboard.catalogue.converters.ProblemKeyConverter takes
        raise Http404(f"no problem {text[:100]!r}")
    problem = (
        Problem.objects.filter(pk=int(text)).first() if text.isdigit() else Problem.objects.filter(stem=text).first()
    )
    if problem is None:
        raise Http404(f"no problem {key!r}")
    return problem
