"""Demo candidate, attempt 1 of an agent: forgets to communicate (each rank returns its own tensor): incorrect."""

import torch


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.clone()
