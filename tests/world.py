"""Run a function on every rank of a small in-machine gloo world (forked processes) and collect the results.

For tests and self-checks of trusted code only (references, independent implementations): candidates never run
through here, they go through the judge's sandboxed rank workers.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import socket
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist


@dataclasses.dataclass(frozen=True)
class GroupRef:
    """A process group as data: the global ranks it spans (ProcessGroups cannot leave their process)."""

    ranks: tuple[int, ...]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def to_portable(value: Any) -> Any:
    """Detach tensors to CPU and replace process groups by GroupRef, recursively."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dist.ProcessGroup):
        return GroupRef(tuple(dist.get_process_group_ranks(value)))
    if isinstance(value, tuple):
        return tuple(to_portable(v) for v in value)
    if isinstance(value, list):
        return [to_portable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_portable(v) for k, v in value.items()}
    return value


def _rank_main(rank: int, world_size: int, port: int, fn: Callable, out_dir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    path = os.path.join(out_dir, f"rank{rank}.pt")
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        result = fn(rank, world_size)
        torch.save({"ok": True, "result": to_portable(result)}, path)
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        torch.save({"ok": False, "error": traceback.format_exc()}, path)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_world(fn: Callable[[int, int], Any], world_size: int, timeout: float = 300.0) -> list[Any]:
    """Call ``fn(rank, world_size)`` on each rank of a fresh gloo world; return the per-rank results (on CPU)."""
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="pkb-world-") as out_dir:
        port = free_port()
        procs = [ctx.Process(target=_rank_main, args=(r, world_size, port, fn, out_dir)) for r in range(world_size)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout)
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        if hung:
            raise TimeoutError(f"ranks {hung} did not finish within {timeout}s")
        results = []
        for r in range(world_size):
            path = os.path.join(out_dir, f"rank{r}.pt")
            if not os.path.exists(path):
                raise RuntimeError(f"rank {r} exited with code {procs[r].exitcode} and no result")
            record = torch.load(path, weights_only=False)
            if not record["ok"]:
                raise RuntimeError(f"rank {r} failed:\n{record['error']}")
            results.append(record["result"])
        return results


@dataclasses.dataclass
class RankRun:
    inputs: tuple
    output: Any


def run_reference(
    problem_id: int,
    world_size: int,
    M: int = 256,
    N: int = 256,
    dtype=torch.bfloat16,
    seed: int = 0,
    trial: int = 0,
    solution: Callable | None = None,
    reduced: bool = True,
) -> list[RankRun]:
    """Build inputs and run the reference (or ``solution``) on every rank; inputs are captured before the call."""

    def body(rank: int, W: int):
        import problems
        from problems.base import InputContext

        problem = problems.get(problem_id)
        ctx = InputContext(
            rank=rank,
            world_size=W,
            M=M,
            N=N,
            dtype=dtype,
            device="cpu",
            seed_base=seed,
            trial=trial,
            problem_id=problem.id,
            reduced=reduced,
        )
        inputs = problem.make_inputs(ctx)
        saved = to_portable(tuple(inputs))
        output = (solution or problem.solution)(*inputs)
        return RankRun(saved, to_portable(output))

    return run_world(body, world_size)
