"""Exploit (semantic shortcut): zeros pass a check whose outputs are all tiny against atol (PKB's several problems)."""
import torch


def solution(tensor):
    return torch.zeros_like(tensor)
