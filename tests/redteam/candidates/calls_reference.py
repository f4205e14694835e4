"""Allowed, not an exploit: the reference's source is public, and calling it gives the right answer, but no speed-up
(it is the reference). Must be correct and not faster."""
from problems.p01_allreduce import solution as reference


def solution(tensor):
    return reference(tensor)
