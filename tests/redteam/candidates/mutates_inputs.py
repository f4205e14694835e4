"""Exploit (input tricks): zero the inputs in place and return zeros, so that a harness computing the reference
afterwards on the same tensors (KernelBench's order) agrees. Here the reference ran in its own process on its own
copy of the inputs."""
import torch


def solution(tensor):
    tensor.zero_()
    return torch.zeros_like(tensor)
