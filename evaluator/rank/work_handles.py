"""The Work handle of a collective that a gloo adapter completed synchronously, for callers that asked
``async_op=True`` (evaluator/rank/gloo_compat.py's forms, evaluator/rank/gloo_staging.py's staged calls)."""

from __future__ import annotations

import torch


class Done:
    """Already complete: wait() returns at once, the future is resolved."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self):
        return None

    def synchronize(self) -> None:
        return None

    def get_future(self):
        future = torch.futures.Future()
        future.set_result(None)
        return future
