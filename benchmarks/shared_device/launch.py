"""A standalone launcher for W rank processes on ONE GPU (issue 41), independent of the judge.

    python benchmarks/shared_device/launch.py facts   --worlds 2 4 8 --out DIR
    python benchmarks/shared_device/launch.py kernels --worlds 2 4 8 --out DIR FILE...
    python benchmarks/shared_device/launch.py references --worlds 8 --out DIR [--problems 1-87]

Every rank is a spawned process on cuda:0 with a per-process memory fraction of the device (0.9 / W), one gloo
process group (CUDA tensors go through gloo), and symmetric memory allowed to overlap devices
(TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1). NVLink multicast stays off for every process.

``facts`` asks the device what the shared world can do: which gloo collectives move CUDA tensors (and whether their
result is right), whether symmetric memory rendezvouses W ranks on one GPU and reads a peer's buffer, the latency of
its signal-pad barrier, and whether NCCL refuses two ranks on one GPU. ``kernels`` runs candidate files (PKB names,
``{id}_{stem}_{backend}.py``) against the problem's reference computed on host copies of the same inputs (CPU gloo,
with the CPU profile's compat forms), two trials each, and records per file: W, verdict, wall seconds.

Results are appended as JSON lines to DIR/facts.jsonl or DIR/kernels.jsonl as they come, so a call that runs out of
time still returns what it did. A file that makes no progress for --stall seconds is recorded as a hang and the
world goes on with the next file (its ranks are killed and started again).

``references`` runs each problem's reference twice in one world: on CUDA inputs with the shared world's staging, and
on host copies of the same inputs (CPU gloo, the CPU profile's compat forms), at the reduced sizes of the CPU
profile. Each side's error is recorded apart, so a failure of gloo itself (on host tensors too) is told from one of
the staging (CUDA tensors only); where both ran, the outputs are compared as the judge compares them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import socket
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAFE_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    "TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES": "1",
}
os.environ.update(SAFE_ENV)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _emit(path: pathlib.Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


def _init(rank: int, world: int, port: int, backend: str = "gloo"):
    import torch
    import torch.distributed as dist

    sys.path[:0] = [str(ROOT), str(ROOT / "evaluator" / "pkb_utils")]
    torch.cuda.set_device(0)
    torch.cuda.set_per_process_memory_fraction(0.9 / world, 0)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    return torch, dist


# --- facts ----------------------------------------------------------------------------------------------------------


def _gloo_forms(torch, dist, rank: int, world: int, only: list) -> dict:
    """Each collective on CUDA tensors through plain gloo (no compat), checked against its known result."""
    dev = "cuda:0"
    base = torch.arange(world * 4, dtype=torch.float32, device=dev) + 100 * rank

    def all_reduce():
        t = base.clone()
        dist.all_reduce(t)
        return t.cpu(), sum(torch.arange(world * 4.0) + 100 * r for r in range(world))

    def broadcast():
        t = base.clone()
        dist.broadcast(t, src=0)
        return t.cpu(), torch.arange(world * 4.0)

    def reduce():
        t = base.clone()
        dist.reduce(t, dst=0)
        want = sum(torch.arange(world * 4.0) + 100 * r for r in range(world)) if rank == 0 else None
        return (t.cpu() if rank == 0 else None), want

    def all_gather_list():
        out = [torch.empty_like(base) for _ in range(world)]
        dist.all_gather(out, base)
        return torch.stack(out).cpu(), torch.stack([torch.arange(world * 4.0) + 100 * r for r in range(world)])

    def all_gather_into_tensor():
        out = torch.empty(world * base.numel(), device=dev)
        dist.all_gather_into_tensor(out, base)
        return out.cpu(), torch.cat([torch.arange(world * 4.0) + 100 * r for r in range(world)])

    def reduce_scatter_tensor():
        out = torch.empty(4, device=dev)
        dist.reduce_scatter_tensor(out, base)
        full = sum(torch.arange(world * 4.0) + 100 * r for r in range(world))
        return out.cpu(), full[rank * 4 : (rank + 1) * 4]

    def all_to_all_single():
        out = torch.empty_like(base)
        dist.all_to_all_single(out, base)
        return out.cpu(), torch.cat(
            [(torch.arange(world * 4.0) + 100 * s)[rank * 4 : (rank + 1) * 4] for s in range(world)]
        )

    def send_recv():
        out = torch.empty_like(base)
        ops = [dist.P2POp(dist.isend, base, (rank + 1) % world), dist.P2POp(dist.irecv, out, (rank - 1) % world)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        return out.cpu(), torch.arange(world * 4.0) + 100 * ((rank - 1) % world)

    def gather():
        out = [torch.empty_like(base) for _ in range(world)] if rank == 0 else None
        dist.gather(base, out, dst=0)
        want = torch.stack([torch.arange(world * 4.0) + 100 * r for r in range(world)]) if rank == 0 else None
        return (torch.stack(out).cpu() if rank == 0 else None), want

    def scatter():
        out = torch.empty(4, device=dev)
        pieces = list(base.chunk(world)) if rank == 0 else None
        dist.scatter(out, pieces, src=0)
        return out.cpu(), torch.arange(world * 4.0)[rank * 4 : (rank + 1) * 4]

    results = {}
    for fn in (
        all_reduce,
        broadcast,
        reduce,
        all_gather_list,
        all_gather_into_tensor,
        reduce_scatter_tensor,
        all_to_all_single,
        send_recv,
        gather,
        scatter,
    ):
        if fn.__name__ not in only:
            continue
        try:
            got, want = fn()
            torch.cuda.synchronize()
            results[fn.__name__] = "ok" if want is None or torch.equal(got, want) else "WRONG RESULT"
        except Exception as exc:  # noqa: BLE001 - the fact is the refusal, whatever its type
            results[fn.__name__] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        dist.barrier()
    return results


def _symm_facts(torch, dist, rank: int, world: int) -> dict:
    import torch.distributed._symmetric_memory as symm_mem

    facts = {"backend": getattr(symm_mem, "get_backend", lambda *_: "?")(torch.device("cuda:0"))}
    buf = symm_mem.empty(4096, dtype=torch.float32, device="cuda:0")
    handle = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
    facts["rendezvous"] = f"ok: rank {handle.rank} of {handle.world_size}"
    buf.fill_(rank + 1.0)
    handle.barrier(channel=0)
    seen = [float(handle.get_buffer(p, (4096,), torch.float32)[-1]) for p in range(world)]
    facts["peer_reads"] = "ok" if seen == [p + 1.0 for p in range(world)] else f"WRONG {seen}"
    handle.barrier(channel=0)
    for mode in ("enqueued", "synchronized"):
        n = 200 if mode == "enqueued" else 50
        torch.cuda.synchronize()
        dist.barrier()
        began = time.perf_counter()
        for _ in range(n):
            handle.barrier(channel=1)
            if mode == "synchronized":
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        facts[f"barrier_us_{mode}"] = round((time.perf_counter() - began) / n * 1e6, 1)
    return facts


FORMS = [
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather_list",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "all_to_all_single",
    "send_recv",
    "gather",
    "scatter",
]


def facts_rank(rank: int, world: int, port: int, out: str, forms: list, symm: bool) -> None:
    """Plain gloo on CUDA tensors can abort the process (gloo writing from a device pointer: "writev: Bad address"),
    so each form runs in a world of its own; symmetric memory in another."""
    torch, dist = _init(rank, world, port)
    record = {"what": "facts", "W": world}
    record["gloo_cuda_forms"] = _gloo_forms(torch, dist, rank, world, forms)
    if symm:
        try:
            record["symmetric_memory"] = _symm_facts(torch, dist, rank, world)
        except Exception as exc:  # noqa: BLE001 - any refusal is the recorded fact
            record["symmetric_memory"] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    records = [None] * world
    dist.all_gather_object(records, record)
    if rank == 0:
        record["gloo_cuda_forms"] = {
            k: sorted({r["gloo_cuda_forms"][k] for r in records}) for k in record["gloo_cuda_forms"]
        }
        if symm:
            sym = record["symmetric_memory"]
            sym["barrier_us_max_over_ranks"] = {
                m: max(r["symmetric_memory"].get(f"barrier_us_{m}", -1) for r in records)
                for m in ("enqueued", "synchronized")
            }
        _emit(pathlib.Path(out) / "facts.jsonl", record)
    dist.destroy_process_group()


def nccl_rank(rank: int, world: int, port: int, out: str) -> None:
    torch, dist = _init(rank, world, port, backend="nccl")
    t = torch.ones(4, device="cuda:0")
    try:
        dist.all_reduce(t)
        torch.cuda.synchronize()
        message = f"no refusal: result {t.tolist()}"
    except Exception as exc:  # noqa: BLE001 - any refusal is the recorded fact
        message = f"{type(exc).__name__}: {str(exc)[:300]}"
    if rank == 0:
        _emit(pathlib.Path(out) / "facts.jsonl", {"what": "nccl_two_ranks_one_gpu", "W": world, "result": message})


# --- kernels --------------------------------------------------------------------------------------------------------


def _load(path: str):
    spec = importlib.util.spec_from_file_location(f"cand_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_rank(rank: int, world: int, port: int, out: str, files: list, progress: str) -> None:
    torch, dist = _init(rank, world, port)
    import problems
    from evaluator.rank import gloo_compat
    from evaluator.rank.outputs import compare_rank
    from problems.base import InputContext

    try:  # the reference's forms on CPU gloo, and CUDA tensors staged through host memory where the adapter can
        staged = gloo_compat.install(stage=True)
    except TypeError:
        staged = gloo_compat.install()
    except ImportError as exc:
        staged = [f"no compat: {exc}"]
    if rank == 0:
        print(f"world {world}: gloo compat {staged}", flush=True)
    for path in files:
        if rank == 0:
            pathlib.Path(progress).write_text(path)
        pid = int(pathlib.Path(path).name.split("_")[0])
        problem = problems.get(pid)
        record = {"what": "kernel", "file": os.path.relpath(path, ROOT), "problem": pid, "W": world}
        began = time.perf_counter()
        oks, error = [], None
        try:
            module = _load(path)
            for trial in range(2):
                ctx = InputContext(
                    rank=rank, world_size=world, device="cuda:0", seed_base=1000 + trial, trial=trial, problem_id=pid
                )
                inputs = problem.make_inputs(ctx)
                host = [x.cpu().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                dist.barrier()
                actual = module.solution(*inputs)
                torch.cuda.synchronize()
                expected = problem.solution(*host)
                oks.append(
                    bool(
                        compare_rank(
                            problem, expected, actual.cpu() if isinstance(actual, torch.Tensor) else actual, rank, world
                        )["ok"]
                    )
                )
        except Exception as exc:  # noqa: BLE001 - a problem's failure, whatever it is, is this rank's recorded error
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
            traceback.print_exc()
        record["wall_s"] = round(time.perf_counter() - began, 2)
        mine = {"ok": error is None and all(oks), "error": error}
        records = [None] * world
        try:
            dist.all_gather_object(records, mine)
        except Exception:  # a rank left the world broken: the parent's stall watch records it
            raise
        if rank == 0:
            record["verdict"] = (
                "correct"
                if all(r["ok"] for r in records)
                else ("error" if any(r["error"] for r in records) else "incorrect")
            )
            record["errors"] = sorted({r["error"] for r in records if r["error"]})[:2]
            _emit(pathlib.Path(out) / "kernels.jsonl", record)
    if rank == 0:
        pathlib.Path(progress).write_text("")
    dist.destroy_process_group()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    head = text.split("\nException raised from")[0].split("\nframe #0")[0]
    return f"{type(exc).__name__}: {head[:400]}"


def references_rank(rank: int, world: int, port: int, out: str, ids: list, progress: str) -> None:
    torch, dist = _init(rank, world, port)
    import problems
    from evaluator.rank import gloo_compat
    from evaluator.rank.outputs import compare_rank
    from problems.base import InputContext

    gloo_compat.install(stage=True)
    for pid in ids:
        if rank == 0:
            pathlib.Path(progress).write_text(str(pid))
        problem = problems.get(pid)
        record = {"what": "reference", "problem": pid, "W": world}
        began = time.perf_counter()
        mine = {"host": None, "staged": None, "ok": None}
        expected = actual = None
        try:
            ctx = InputContext(rank=rank, world_size=world, device="cuda:0", seed_base=77, problem_id=pid, reduced=True)
            inputs = problem.make_inputs(ctx)
            host = [x.cpu().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        except Exception as exc:  # noqa: BLE001 - any failure is recorded, and the world goes on
            mine["host"] = mine["staged"] = f"inputs: {_first_line(exc)}"
            inputs = host = None
        if host is not None:
            dist.barrier()
            try:
                expected = problem.solution(*host)
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, and the world goes on
                mine["host"] = _first_line(exc)
            dist.barrier()
            try:
                actual = problem.solution(*inputs)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, and the world goes on
                mine["staged"] = _first_line(exc)
                traceback.print_exc()
        if mine["host"] is None and mine["staged"] is None:
            try:
                moved = actual.cpu() if isinstance(actual, torch.Tensor) else actual
                if isinstance(moved, (list, tuple)):
                    moved = type(moved)(m.cpu() if isinstance(m, torch.Tensor) else m for m in moved)
                verdict = compare_rank(problem, expected, moved, rank, world)
                mine["ok"] = bool(verdict["ok"])
                if not mine["ok"]:
                    mine["staged"] = f"differs: {str(verdict.get('message') or verdict)[:300]}"
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, and the world goes on
                mine["staged"] = f"compare: {_first_line(exc)}"
        records = [None] * world
        dist.all_gather_object(records, mine)
        if rank == 0:
            record["wall_s"] = round(time.perf_counter() - began, 2)
            record["host_errors"] = sorted({r["host"] for r in records if r["host"]})[:2]
            record["staged_errors"] = sorted({r["staged"] for r in records if r["staged"]})[:2]
            record["verdict"] = (
                "same"
                if all(r["ok"] for r in records)
                else "host_error"
                if record["host_errors"]
                else "staged_differs_or_fails"
            )
            _emit(pathlib.Path(out) / "references.jsonl", record)
        torch.cuda.empty_cache()
    if rank == 0:
        pathlib.Path(progress).write_text("")
    dist.destroy_process_group()


def _spawn(target, world: int, args: tuple, stall_s: float, progress: str | None = None) -> str:
    """Start W rank processes; wait until they end, or until no progress for ``stall_s``. Returns 'done' or
    'stalled'."""
    import torch.multiprocessing as mp

    context = mp.start_processes(
        target, args=(world, _free_port(), *args), nprocs=world, join=False, start_method="spawn"
    )
    last, mark = time.monotonic(), None
    while True:
        try:
            if context.join(timeout=2):
                return "done"
        except Exception as exc:  # noqa: BLE001 - a rank raised or died, in whichever way torch reports it
            print(f"world {world}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            return "failed"
        now_mark = pathlib.Path(progress).read_text() if progress and os.path.exists(progress) else None
        now_mark = (now_mark, os.path.getmtime(progress)) if now_mark is not None else None
        if now_mark != mark:
            mark, last = now_mark, time.monotonic()
        if time.monotonic() - last > stall_s:
            for p in context.processes:
                if p.is_alive():
                    p.kill()
            return "stalled"


def _resumable(target, world: int, items: list, out: str, stall_s: float, progress: str, jsonl, lost) -> None:
    """Run ``target`` over ``items`` in one world of W ranks. The world names the item it is on in ``progress``; if it
    hangs or crashes there, ``lost(item)`` (what names the item) is recorded in ``jsonl`` with W and the verdict
    "hang" or "crash", and a fresh world goes on with the items after it."""
    while items:
        status = _spawn(target, world, (out, items, progress), stall_s, progress)
        if status == "done":
            return
        current = pathlib.Path(progress).read_text() if os.path.exists(progress) else ""
        names = [str(item) for item in items]
        if current not in names:
            return
        verdict = "hang" if status == "stalled" else "crash"
        _emit(jsonl, {**lost(items[names.index(current)]), "W": world, "verdict": verdict})
        items = items[names.index(current) + 1 :]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["facts", "kernels", "references"])
    parser.add_argument("--problems", default="1-87", help="references: ids, e.g. 1-87 or 10,33")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/shared_device"))
    parser.add_argument("--stall", type=float, default=90.0)
    parser.add_argument("--nccl", action="store_true", help="facts: also try NCCL with two ranks on one GPU")
    args = parser.parse_intermixed_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for world in args.worlds:
        began = time.perf_counter()
        if args.mode == "facts":
            status = _spawn(facts_rank, world, (str(out), [], True), args.stall)
            _emit(
                out / "facts.jsonl",
                {
                    "what": "symmetric_memory_world",
                    "W": world,
                    "status": status,
                    "wall_s": round(time.perf_counter() - began, 1),
                },
            )
            continue
        progress = str(out / f"progress_{world}")
        if args.mode == "references":
            sys.path.insert(0, str(ROOT))
            from evaluator.cli import _parse_ids  # pkb selfcheck's --problems syntax

            _resumable(
                references_rank,
                world,
                _parse_ids(args.problems),
                str(out),
                args.stall,
                progress,
                out / "references.jsonl",
                lambda pid: {"what": "reference", "problem": pid},
            )
            continue
        _resumable(
            kernels_rank,
            world,
            [str(pathlib.Path(f).resolve()) for f in args.files],
            str(out),
            args.stall,
            progress,
            out / "kernels.jsonl",
            lambda path: {
                "what": "kernel",
                "file": os.path.relpath(path, ROOT),
                "problem": int(pathlib.Path(path).name.split("_")[0]),
            },
        )
        _emit(
            out / "kernels.jsonl",
            {"what": "kernels_world", "W": world, "wall_s": round(time.perf_counter() - began, 1)},
        )
    if args.mode == "facts":
        for form in FORMS:  # plain gloo (no compat) on CUDA tensors, each form in its own two-rank world
            status = _spawn(facts_rank, 2, (str(out), [form], False), 60.0)
            if status != "done":
                _emit(
                    out / "facts.jsonl",
                    {"what": "gloo_cuda_form", "W": 2, "form": form, "status": f"world {status} (see facts.log)"},
                )
    if args.mode == "facts" and args.nccl:
        began = time.perf_counter()
        status = _spawn(nccl_rank, 2, (str(out),), 60.0)
        _emit(
            out / "facts.jsonl",
            {"what": "nccl_world", "W": 2, "status": status, "wall_s": round(time.perf_counter() - began, 1)},
        )


if __name__ == "__main__":
    main()
