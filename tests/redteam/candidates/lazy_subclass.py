"""Exploit (semantic shortcut): return a torch.Tensor subclass that claims to equal anything it is compared with
(__eq__, allclose, sub through __torch_function__), with the wrong values inside. Outputs must be plain tensors."""
import torch


class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("eq", "__eq__", "allclose", "equal", "isclose"):
            return True
        if name in ("sub", "__sub__", "abs"):
            return torch.zeros(())
        return super().__torch_function__(func, types, args, kwargs or {})


def solution(tensor):
    return torch.zeros_like(tensor).as_subclass(Agreeable)
