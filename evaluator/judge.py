"""The trusted judge: evaluates one candidate for one problem on W ranks and returns the result document.

Protocol (one job): start the reference ranks and the candidate ranks as two separate process groups; for each of
``trials`` fresh seeds, run the reference, keep its outputs here, run the candidate, compare every rank's output
here; then time both sides in alternating blocks (reference block, candidate block, ...), each block on freshly built
inputs with rotating clones of the timed argument; then one more trial on a new seed to re-check the candidate's
outputs after the timed loop. The candidate never sees expected outputs: they exist only in the reference's private
directory (deleted as soon as they are read) and in this process.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
from typing import Optional

import torch

import problems
from evaluator import policy, schema, stats
from evaluator.compare import compare
from evaluator.group import GroupFailure, RankGroup


class BadRequest(ValueError):
    """The evaluation cannot start: unknown problem, missing file, world size not allowed... (CLI exit status 2)."""


@dataclasses.dataclass
class Config:
    world_size: int
    device: str = "cpu"
    trials: int = 5
    seed: Optional[int] = None
    M: int = 1024
    N: int = 1024
    dtype: str = "bfloat16"
    reduced: bool = False
    timing: bool = True
    multicast_allowed: bool = False
    timeout_s: Optional[float] = None  # per command; default: the problem's own budget
    startup_timeout_s: float = 600.0
    timing_budget_ms: Optional[float] = None  # per side; default 2000 on GPU, 600 on CPU
    max_attempts: int = 2  # infrastructure failures are retried, never scored

    @property
    def blocks(self) -> int:
        return 6 if self.device == "cuda" else 4

    def budget_ms(self) -> float:
        return self.timing_budget_ms or (2000.0 if self.device == "cuda" else 600.0)


def evaluate(problem, candidate: str, world_size: int, device: str = "cpu", **options) -> dict:
    """Judge ``candidate`` (a path, or "reference" for an A/A run) on ``problem`` (id or stem); see evaluator.schema."""
    cfg = Config(world_size=world_size, device=device, **options)
    prob = _resolve(problem, cfg)
    source, digest = _read_candidate(candidate)
    if source is not None:
        candidate = os.path.abspath(candidate)  # ranks run in their own scratch directories
    base = _skeleton(prob, candidate, digest, cfg)
    started = time.monotonic()
    pre = _static_checks(source, cfg)
    if pre:
        base.update(pre)
        base["wall_s"] = round(time.monotonic() - started, 3)
        return base
    seeds = _seeds(cfg)
    result: dict = {}
    for attempt in range(1, cfg.max_attempts + 1):
        result = _run_once(prob, candidate, cfg, seeds, base)
        result["attempts"] = attempt
        if result["verdict"] != schema.INFRA_ERROR:
            break
    result["wall_s"] = round(time.monotonic() - started, 3)
    inside_s = result.pop("_inside_s", 0.0)
    result["judge_overhead_s"] = round(max(0.0, result["wall_s"] - inside_s), 3)
    return result


# --- preparation ------------------------------------------------------------------------------------------------------

def _resolve(problem, cfg: Config):
    try:
        prob = problem if isinstance(problem, problems.Problem) else problems.get(problem)
    except problems.UnknownProblem as exc:
        raise BadRequest(str(exc)) from exc
    if cfg.world_size < 1 or not prob.allows_world_size(cfg.world_size):
        raise BadRequest(f"world size {cfg.world_size} is not allowed by {prob.stem} (rule: {prob.world_size_rule})")
    if cfg.device not in ("cpu", "cuda"):
        raise BadRequest(f"device must be cpu or cuda, not {cfg.device!r}")
    if cfg.device == "cuda" and torch.cuda.device_count() < cfg.world_size:
        raise BadRequest(f"world size {cfg.world_size} needs {cfg.world_size} GPUs; "
                         f"this host has {torch.cuda.device_count()}")
    if cfg.trials < 1:
        raise BadRequest("at least one trial is needed")
    return prob


def _read_candidate(candidate: str) -> tuple[Optional[str], str]:
    if candidate == "reference" or candidate.startswith("null:"):
        return None, ""
    if not os.path.isfile(candidate):
        raise BadRequest(f"candidate file not found: {candidate}")
    raw = open(candidate, "rb").read()
    try:
        return raw.decode("utf-8"), hashlib.sha256(raw).hexdigest()
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{candidate} is not UTF-8 text: {exc}") from exc


def _skeleton(prob, candidate: str, digest: str, cfg: Config) -> dict:
    return {
        "schema": schema.SCHEMA_VERSION, "problem": prob.stem, "problem_id": prob.id, "candidate": candidate,
        "candidate_sha256": digest, "world_size": cfg.world_size, "device": cfg.device,
        "shape": {"M": cfg.M, "N": cfg.N, "dtype": cfg.dtype, "reduced": cfg.reduced},
        "verdict": None, "message": "", "flags": [], "trials": [], "timing": None, "environment": {},
        "logs": [], "attempts": 0,
    }


def _static_checks(source: Optional[str], cfg: Config) -> Optional[dict]:
    if source is None:
        return None
    violation = policy.scan(source, cfg.multicast_allowed)
    if violation:
        return {"verdict": schema.POLICY_VIOLATION, "message": violation.message()}
    try:
        compile(source, "candidate.py", "exec")
    except SyntaxError as exc:
        return {"verdict": schema.COMPILE_ERROR, "message": f"SyntaxError: {exc.msg} (line {exc.lineno})"}
    return None


def _seeds(cfg: Config) -> list[int]:
    rng = random.Random(cfg.seed) if cfg.seed is not None else random.SystemRandom()
    return [rng.getrandbits(62) for _ in range(cfg.trials + 1)]  # the last one re-checks after timing


# --- one attempt ------------------------------------------------------------------------------------------------------

def _run_once(prob, candidate: str, cfg: Config, seeds: list[int], base: dict) -> dict:
    result = dict(base, trials=[], flags=[], logs=[], timing=None)
    workdir = tempfile.mkdtemp(prefix="pkb-judge-")
    os.chmod(workdir, 0o700)
    ref = cand = None
    try:
        common = dict(world_size=cfg.world_size, device=cfg.device, problem=str(prob.id), M=cfg.M, N=cfg.N,
                      dtype=cfg.dtype, reduced=cfg.reduced)
        ref = RankGroup("ref", candidate="reference", workdir=os.path.join(workdir, "ref"), trusted=True, **common)
        cand = RankGroup("cand", candidate=candidate, workdir=os.path.join(workdir, "cand"),
                         trusted=candidate == "reference" or candidate.startswith("null:"), **common)
        pair = Pair(prob, ref, cand, cfg)
        outcome = pair.start()
        if outcome is None:
            outcome = pair.judge(seeds)
        result.update(outcome)
        result["environment"] = pair.environment
        result["_inside_s"] = pair.inside_s
    except Exception as exc:  # noqa: BLE001 - a harness bug or a lost process is never the candidate's fault
        result.update(verdict=schema.INFRA_ERROR, message=f"judge failure: {type(exc).__name__}: {exc}")
    finally:
        for group in (cand, ref):
            if group is not None:
                group.close()
        if cand is not None:
            result["logs"] = cand.logs()
        if ref is not None and result.get("verdict") == schema.INFRA_ERROR:
            result["logs"] += ref.logs()
        shutil.rmtree(workdir, ignore_errors=True)
    return result


class Pair:
    """A reference group and a candidate group for one problem, judged side by side."""

    def __init__(self, prob, ref: RankGroup, cand: RankGroup, cfg: Config):
        self.prob, self.ref, self.cand, self.cfg = prob, ref, cand, cfg
        self.environment: dict = {}
        self.inside_s = 0.0
        self.timeout = cfg.timeout_s or prob.timeout_s

    # Failures on the reference side are the platform's; on the candidate side they are the candidate's.
    def _ref_command(self, cmd: dict, timeout: float) -> list[dict]:
        try:
            return self.ref.command(cmd, timeout)
        except GroupFailure as exc:
            raise _Stop(schema.INFRA_ERROR, f"reference rank {exc.rank} failed ({exc.kind}): {exc.message}")

    def _cand_command(self, cmd: dict, timeout: float) -> list[dict]:
        try:
            return self.cand.command(cmd, timeout)
        except GroupFailure as exc:
            raise _Stop(_candidate_verdict(exc.kind), f"rank {exc.rank}: {exc.message}")

    def start(self) -> Optional[dict]:
        try:
            try:
                ready = self.ref.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                raise _Stop(schema.INFRA_ERROR, f"reference ranks failed to start ({exc.kind}): {exc.message}")
            self.environment = ready[0].get("env") or {}
            try:
                self.cand.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                raise _Stop(_candidate_verdict(exc.kind, loading=True), f"rank {exc.rank}: {exc.message}")
        except _Stop as stop:
            return stop.as_result()
        return None

    def load(self, candidate: str) -> Optional[dict]:
        """Switch both groups to this problem (trusted self-checks only)."""
        try:
            self._ref_command({"cmd": "load", "problem": str(self.prob.id), "candidate": "reference"},
                              self.cfg.startup_timeout_s)
            self._cand_command({"cmd": "load", "problem": str(self.prob.id), "candidate": candidate},
                               self.cfg.startup_timeout_s)
        except _Stop as stop:
            return stop.as_result()
        return None

    def judge(self, seeds: list[int], timing: Optional[bool] = None) -> dict:
        trials: list[dict] = []
        try:
            estimates = []
            for t, seed in enumerate(seeds[:-1]):
                record, est = self._trial(t, seed, tag=f"t{t}")
                trials.append(record)
                estimates.append(est)
                if record["verdict"] != schema.CORRECT:
                    return {"verdict": schema.INCORRECT, "trials": trials,
                            "message": f"trial {t}: {_first_mismatch(record)}"}
            timing_doc = None
            if self.cfg.timing if timing is None else timing:
                timing_doc = self._time(seeds[0], min(estimates[1:] or estimates))
                record, _ = self._trial(len(seeds) - 1, seeds[-1], tag="post")
                record["after_timing"] = True
                trials.append(record)
                if record["verdict"] != schema.CORRECT:
                    return {"verdict": schema.INCORRECT, "trials": trials, "timing": None,
                            "message": f"outputs changed after the timed loop: {_first_mismatch(record)}"}
            flags = list(timing_doc.pop("_flags")) if timing_doc else []
            return {"verdict": schema.CORRECT, "trials": trials, "timing": timing_doc, "flags": flags,
                    "message": f"all {len(trials)} trials correct on {self.cfg.world_size} rank(s)"}
        except _Stop as stop:
            out = stop.as_result()
            out["trials"] = trials
            return out

    def _trial(self, index: int, seed: int, tag: str) -> tuple[dict, float]:
        cmd = {"cmd": "trial", "trial": index, "seed": seed, "tag": tag}
        ref_replies = self._ref_command(cmd, self.timeout)
        expected = [_load_output(self.ref.out_dir, tag, r, delete=True) for r in range(self.cfg.world_size)]
        cand_replies = self._cand_command(cmd, self.timeout)
        ranks, ok = [], True
        slack = (lambda tensor: self.prob.slack(tensor, self.cfg.world_size)) if self.prob.slack else None
        for r in range(self.cfg.world_size):
            try:
                actual = _load_output(self.cand.out_dir, tag, r, delete=True)
            except Exception as exc:  # noqa: BLE001 - a forged or unreadable output is a wrong output
                ranks.append({"rank": r, "ok": False, "message": f"unreadable output: {exc}"})
                ok = False
                continue
            if self.prob.compare is not None:
                message = self.prob.compare(expected[r], actual, self.cfg.world_size)
                entry = {"rank": r, "ok": message is None, "message": message}
            else:
                entry = dict(rank=r, **compare(expected[r], actual, self.prob.atol, self.prob.rtol, slack).to_dict())
            ranks.append(entry)
            ok = ok and entry["ok"]
        ref_ms = max(x.get("ms", 0.0) for x in ref_replies)
        cand_ms = max(x.get("ms", 0.0) for x in cand_replies)
        self.inside_s += (ref_ms + cand_ms) / 1e3
        record = {"trial": index, "seed": seed, "verdict": schema.CORRECT if ok else schema.INCORRECT,
                  "ranks": ranks, "output_shapes": describe(expected[0]), "reference_call_ms": round(ref_ms, 4), "candidate_call_ms": round(cand_ms, 4)}
        return record, max(ref_ms, cand_ms)

    def _time(self, seed: int, estimate_ms: float) -> dict:
        cfg = self.cfg
        per_block = cfg.budget_ms() / cfg.blocks
        iters = int(min(100, max(3 if cfg.device == "cpu" else 10, per_block / max(estimate_ms, 1e-3))))
        ref_blocks, cand_blocks, walls = [], [], {"ref": [], "cand": []}
        for b in range(cfg.blocks):
            warmup = max(3, iters // 5) if b == 0 else 1
            # Spin long enough for the host to queue a call ahead of the start event (see rank_worker.time).
            spin_us = min(2000.0, max(20.0, estimate_ms * 1e3)) if cfg.device == "cuda" else 0.0
            cmd = {"cmd": "time", "trial": 0, "seed": seed, "iters": iters, "warmup": warmup, "spin_us": spin_us}
            # Alternate which side goes first so neither always follows the other.
            order = (("ref", self._ref_command), ("cand", self._cand_command))
            for side, run in (order if b % 2 == 0 else order[::-1]):
                began = time.monotonic()
                replies = run(cmd, self.timeout + 0.5 * iters * estimate_ms / 1e3 * 10)
                wall_ms = (time.monotonic() - began) * 1e3
                samples = _samples(replies, iters, side)
                (ref_blocks if side == "ref" else cand_blocks).append(samples)
                walls[side].append(wall_ms / (iters + warmup))
                self.inside_s += (sum(samples) + warmup * statistics.median(samples)) / 1e3
        return _timing_document(ref_blocks, cand_blocks, walls, cfg)

    def close(self):
        for group in (self.cand, self.ref):
            group.close()


class _Stop(Exception):
    def __init__(self, verdict: str, message: str):
        super().__init__(message)
        self.verdict, self.message = verdict, message

    def as_result(self) -> dict:
        return {"verdict": self.verdict, "message": self.message}


def _candidate_verdict(kind: str, loading: bool = False) -> str:
    if kind in (schema.COMPILE_ERROR, schema.RUNTIME_ERROR, schema.INCORRECT, schema.INFRA_ERROR, schema.TIMEOUT):
        return kind
    if kind == "exited":
        return schema.RUNTIME_ERROR
    return schema.RUNTIME_ERROR  # protocol violations and anything unknown


def _samples(replies: list[dict], iters: int, side: str) -> list[float]:
    samples = replies[0].get("samples")
    if not isinstance(samples, list) or len(samples) != iters or not all(isinstance(x, (int, float)) for x in samples):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR,
                    f"{side} rank 0 returned malformed timing samples")
    if any(not (x >= 0.0) for x in samples):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR, f"{side} reported negative times")
    return [float(x) for x in samples]


def _load_output(out_dir: str, tag: str, rank: int, delete: bool):
    path = os.path.join(out_dir, f"{tag}_r{rank}.pt")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no output file for rank {rank}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    finally:
        if delete:
            os.unlink(path)


def describe(value):
    """The structure of an output with shapes and dtypes instead of values, e.g. [[1024, 1024], "bfloat16"]."""
    if isinstance(value, torch.Tensor):
        return [list(value.shape), str(value.dtype).replace("torch.", "")]
    if isinstance(value, (tuple, list)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    return type(value).__name__


def _first_mismatch(record: dict) -> str:
    for entry in record["ranks"]:
        if not entry["ok"]:
            where = entry.get("where") or "output"
            return f"rank {entry['rank']}, {where}: {entry.get('message')}"
    return "mismatch"


def _timing_document(ref_blocks, cand_blocks, walls, cfg: Config) -> dict:
    ref_all = [x for block in ref_blocks for x in block]
    cand_all = [x for block in cand_blocks for x in block]
    ref_ms, cand_ms = stats.median(ref_all), stats.median(cand_all)
    low, high = stats.bootstrap_speedup_ci(ref_blocks, cand_blocks)
    crosscheck = _crosscheck(ref_blocks, cand_blocks, walls, cfg)
    flags = [schema.FLAG_TIMING_CROSSCHECK] if crosscheck["suspect"] else []
    ranked = cfg.device == "cuda" and not flags
    return {
        "reference_ms": round(ref_ms, 6), "candidate_ms": round(cand_ms, 6),
        "speedup": round(ref_ms / cand_ms, 4) if cand_ms > 0 else None,
        "speedup_ci": [round(low, 4), round(high, 4)], "faster": bool(low > 1.0 and not flags),
        "samples": len(cand_all), "reference_samples": len(ref_all), "blocks": len(ref_blocks),
        "ranked": ranked, "method": "cuda_events" if cfg.device == "cuda" else "wall_clock",
        "crosscheck": crosscheck, "_flags": flags,
    }


def _crosscheck(ref_blocks, cand_blocks, walls, cfg: Config) -> dict:
    """Compare what each side reported with the judge's own clock around each block.

    The per-call wall time seen here minus the reported time is the harness overhead (barrier, sync, pipes). The
    reference and candidate ranks run the same harness, so their overheads should agree; a candidate whose unexplained
    time is much larger than the reference's did work outside its reported window (side streams, threads, forged
    events), and its timing is flagged and never ranked.
    """
    skip = 1 if len(ref_blocks) > 2 else 0  # the first block includes warm-up and compilation

    def overhead(blocks, wall):
        reported = statistics.median([statistics.fmean(b) for b in blocks[skip:]])
        return statistics.median(wall[skip:]) - reported, statistics.median(wall[skip:])

    ref_over, ref_wall = overhead(ref_blocks, walls["ref"])
    cand_over, cand_wall = overhead(cand_blocks, walls["cand"])
    floor_ms = 0.05 if cfg.device == "cuda" else 2.0
    unexplained = cand_over - max(ref_over, 0.0)
    suspect = unexplained > max(floor_ms, 0.25 * cand_wall)
    return {"reference_wall_per_call_ms": round(ref_wall, 4), "candidate_wall_per_call_ms": round(cand_wall, 4),
            "reference_overhead_ms": round(ref_over, 4), "candidate_overhead_ms": round(cand_over, 4),
            "unexplained_ms": round(unexplained, 4), "suspect": bool(suspect)}
