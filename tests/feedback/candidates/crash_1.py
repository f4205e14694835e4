"""Crashes for problem 1 on every rank, inside solution()."""


def solution(tensor):
    raise RuntimeError("boom: this candidate crashes on purpose")
