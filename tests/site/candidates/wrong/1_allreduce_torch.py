"""Wrong candidate for problem 1: no communication, each rank returns its own tensor."""
import torch


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.clone()
