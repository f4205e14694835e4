"""The trusted judge: evaluates one candidate for one problem on W ranks and returns the result document.

Protocol (one job): start the reference ranks and the candidate ranks as two separate process groups; for each of
``trials`` fresh seeds, run the reference (its ranks hold their outputs on their devices), run the candidate (its
ranks write theirs to files), and have each reference rank compare the candidate's file with what it holds
(evaluator/outputs.py); then time both sides in alternating blocks (reference block, candidate block, ...), each block
on freshly built inputs with rotating clones of the timed argument; then one more trial on a new seed to re-check the
candidate's outputs after the timed loop. The candidate never sees expected outputs: they never leave the reference's
processes, which are stopped whenever the candidate's ranks run.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import math
import os
import random
import shutil
import statistics
import tempfile
import time
from typing import Optional

import torch

import problems
from evaluator import outputs, pairs, physics, policy, sandbox, schema, stats, warm
from evaluator.group import GroupFailure, RankGroup, close_all
from evaluator.rank_worker import SPIN_MAX_US, timing_set_seed
from problems.base import derive_seed


class BadRequest(ValueError):
    """The evaluation cannot start: unknown problem, missing file, world size not allowed... (CLI exit status 2)."""


_sandbox_required_by_default = sandbox.required_by_default  # (inside Config, ``sandbox`` names a field)


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
    # Hidden checks the candidate cannot predict (docs/threat-model.md, "hard-coded W or shapes"): one more trial at
    # a shape (M', N') the judge draws, and a correctness-only run at another world size.
    hidden_shape: bool = False
    hidden_world_size: Optional[int] = None
    # False: candidate ranks run without uid/network isolation and are not paused (debugging, red-team tests).
    # PKB_SANDBOX=0 in the judge's environment switches it off for a whole deployment.
    sandbox: bool = dataclasses.field(default_factory=sandbox.enabled_by_default)
    # Fail closed: with every sandbox layer or not at all (an infra_error naming what is missing). Every ranked
    # profile's jobs ask for it; PKB_SANDBOX=required asks for it for a whole deployment.
    sandbox_required: bool = dataclasses.field(default_factory=_sandbox_required_by_default)
    light_ceilings: Optional[dict] = None  # peak rates for the speed-of-light floor; default: the GPU's, none on CPU
    # Explicit, published trial seeds (feedback runs): each carries PUBLIC_SEED_BIT, which the judge's own secret
    # draws never do, so public and hidden seeds cannot mix. ``trials`` + 1 of them (the last re-checks after timing).
    seeds: Optional[list] = None
    profile_dir: Optional[str] = None  # profile mode: torch profiler traces of both groups (evaluator/profiling.py)
    # Time in this many fresh process pairs and combine them (evaluator/pairs.py); 1: one pair, the 8.3% floor.
    pairs: int = 1
    # A calibration switch (docs/calibration.md): each timing block's data placed anew in device memory
    # (rank_worker.REPLACE_PAD_BYTES). Off until a GPU run has shown what it does to the pairs' offsets.
    replace_memory: bool = False
    # Pairs 2..K: the first pair's per-call estimate. Their single trial is each process's first call, which is cold,
    # and a cold estimate sets a judge's spin many times too long, whose wall then varies with the GPU clock and reads
    # as a candidate's unexplained time (honest candidates flagged; docs/calibration.md).
    timing_estimate_ms: Optional[float] = None
    # The same for the reference's own call alone: what the judge's spin starts from (Pair._time), so that a
    # candidate's reported call time cannot lengthen it.
    timing_reference_estimate_ms: Optional[float] = None
    # Timing blocks with no spin, after the spun ones (Pair._time, _probe_check); None: three on CUDA (their
    # median is read), none on CPU, where no block spins.
    probe: Optional[int] = None
    # Probe blocks in every pair, also where the candidate cannot be faster (calibration runs: benchmarks/judge_gpu.py).
    probe_always: bool = False

    @property
    def blocks(self) -> int:
        return 6 if self.device == "cuda" else 4

    @property
    def probe_blocks(self) -> int:
        return self.probe if self.probe is not None else (3 if self.device == "cuda" else 0)

    def budget_ms(self) -> float:
        return self.timing_budget_ms or (2000.0 if self.device == "cuda" else 600.0)


MAX_ITERS = 100  # timed calls per block, per side, when one pair does all the timing
# A probe block (no spin) has up to this many times a spun block's calls: it costs less per call, and the block's own
# fixed cost, which varies by milliseconds, then weighs less in its wall per call (_probe_check).
PROBE_CALLS_FACTOR = 4.0


def evaluate(problem, candidate: str, world_size: int, device: str = "cpu", pool=None, **options) -> dict:
    """Judge ``candidate`` (a path, or "reference" for an A/A run) on ``problem`` (id or stem); see evaluator.schema.
    ``pool``: an evaluator.warm.WarmPool whose started groups the first attempt uses (a retry starts cold)."""
    cfg = Config(world_size=world_size, device=device, **options)
    prob = _resolve(problem, cfg)
    source, digest = _read_candidate(candidate)
    if source is not None:
        candidate = os.path.abspath(candidate)  # ranks run in their own scratch directories
    base = _skeleton(prob, candidate, digest, cfg)
    started = time.monotonic()
    pre = _static_checks(source, cfg, os.path.basename(candidate))
    if pre:
        base.update(pre)
        base["wall_s"] = round(time.monotonic() - started, 3)
        return base
    seeds = _seeds(cfg)
    result: dict = {}
    for attempt in range(1, cfg.max_attempts + 1):
        # A sandbox that cannot start is an infra_error like any other (retried, never scored): the judge never
        # switches it off to get a verdict.
        result = _run_once(prob, candidate, cfg, seeds, base, pool if attempt == 1 else None)
        result["attempts"] = attempt
        if result["verdict"] != schema.INFRA_ERROR or result.get("_final"):
            break
    result.pop("_final", None)
    # A cross-check flag in the first pair is weighed with the other pairs' (pairs.triage); any other flag is final.
    # One pair (the default) whose cross-check was suspect is timed once more in fresh processes: honest candidates
    # sometimes exceed the allowance (docs/calibration.md), and a flag keeps a result off the rankings.
    flags = set(result.get("flags") or [])
    if (result["verdict"] == schema.CORRECT and result.get("timing") and not flags - {schema.FLAG_TIMING_CROSSCHECK}
            and (cfg.pairs > 1 or schema.FLAG_TIMING_CROSSCHECK in flags)):
        _more_pairs(prob, candidate, cfg, base, result, pool, count=max(cfg.pairs, 2))
    if cfg.hidden_world_size and result["verdict"] == schema.CORRECT:
        _hidden_world(prob, candidate, cfg, base, result)
    _flag_unsandboxed(result)
    _never_rank_flagged(result)
    result["wall_s"] = round(time.monotonic() - started, 3)
    inside_s = result.pop("_inside_s", 0.0)
    result["judge_overhead_s"] = round(max(0.0, result["wall_s"] - inside_s), 3)
    return result


def _flag_unsandboxed(result: dict) -> None:
    """A candidate that ran without every sandbox layer could have read what it must not (the reference's memory as
    root, the host's files): its result is flagged and never ranks, whatever its verdict."""
    notes = (result.get("environment") or {}).get("sandbox")
    if notes and not notes.get("complete") and result.get("verdict") != schema.INFRA_ERROR:
        result["flags"] = sorted(set(result.get("flags") or []) | {schema.FLAG_UNSANDBOXED})


def _never_rank_flagged(result: dict) -> None:
    """A flagged result is shown as such and never ranks: not faster, not ranked, whatever its numbers say."""
    timing = result.get("timing")
    if result.get("flags") and timing:
        timing["faster"] = False
        timing["ranked"] = False


def _more_pairs(prob, candidate: str, cfg: Config, base: dict, result: dict, pool, count: int) -> None:
    """Time pairs 2..count, each in fresh groups with one trial of its own (correctness is checked in every pair),
    and combine the timings (evaluator/pairs.py). A pair the platform fails is dropped and said so; any other failure
    in a pair is the verdict, as in the first one. With ``cfg.pairs`` = 1 this is the retiming of a suspect pair:
    the result is flagged only if the second pair is suspect too, and otherwise takes the second pair's timing."""
    # ``pairs`` stays K: every pair times its 1/K share (Judge._time).
    one = dataclasses.replace(cfg, trials=1, hidden_shape=False, hidden_world_size=None, profile_dir=None,
                              timing_estimate_ms=result["timing"].get("estimate_ms"),
                              timing_reference_estimate_ms=result["timing"].get("reference_estimate_ms"))
    timed, dropped = [(1, result["timing"])], []
    flags = set(result.get("flags") or [])
    for k in range(2, count + 1):
        seeds = _seeds(dataclasses.replace(one, seed=None if cfg.seed is None else derive_seed(cfg.seed, "pair", k)))
        outcome = _run_once(prob, candidate, one, seeds, dict(base), pool)
        result["_inside_s"] = result.get("_inside_s", 0.0) + outcome.get("_inside_s", 0.0)
        if outcome["verdict"] == schema.INFRA_ERROR:
            dropped.append({"pair": k, "message": outcome.get("message", "")[:500]})
            continue
        result["trials"] = result.get("trials", []) + [dict(t, pair=k) for t in outcome.get("trials", [])]
        if outcome["verdict"] != schema.CORRECT:
            result.update(verdict=outcome["verdict"], timing=None, flags=[],
                          message=f"in timing pair {k} of {count}: {outcome.get('message', '')}")
            return
        flags |= set(outcome.get("flags") or [])
        timed.append((k, outcome["timing"]))
    flags.discard(schema.FLAG_TIMING_CROSSCHECK)  # decided over all pairs:
    retimed = cfg.pairs == 1
    suspect, combined, aside = pairs.triage(timed, retimed=retimed)
    # A retimed pair is not pooled with the suspect one it replaces: its own probe check passed or flagged it.
    pooled = None if retimed else pairs.probe_pooled([t for _, t in timed], cfg.device)
    if suspect or (pooled and pooled["suspect"]):
        flags.add(schema.FLAG_TIMING_CROSSCHECK)
    result["flags"] = sorted(flags)
    if len(combined) > 1:
        result["timing"] = pairs.combine([t for _, t in combined], cfg.device, HOST_BOUND_NOISE_FLOOR, dropped, aside)
    else:  # one pair left: its own document, with the one-pair floor it was judged with
        result["timing"] = dict(combined[0][1], pairs={"count": 1, "dropped": dropped, "set_aside": aside})
    result["timing"]["pairs"]["probe"] = pooled


def _hidden_world(prob, candidate: str, cfg: Config, base: dict, result: dict) -> None:
    """Correctness only, at a world size the candidate was not launched with; a failure there is the verdict."""
    W = cfg.hidden_world_size
    record = {"world_size": W}
    if W == cfg.world_size or W < 1 or not prob.allows_world_size(W):
        record.update(verdict="skipped", message=f"W={W} is not another world size allowed by {prob.stem}")
    elif cfg.device == "cuda" and torch.cuda.device_count() < W:
        record.update(verdict="skipped", message=f"W={W} needs {W} GPUs")
    else:
        hidden_cfg = dataclasses.replace(cfg, world_size=W, trials=1, timing=False, hidden_world_size=None)
        seeds = _seeds(dataclasses.replace(hidden_cfg, seed=None if cfg.seed is None else derive_seed(cfg.seed, W)))
        outcome = _run_once(prob, candidate, hidden_cfg, seeds, dict(base, world_size=W))
        record.update(verdict=outcome["verdict"], message=outcome.get("message", ""))
        result["_inside_s"] = result.get("_inside_s", 0.0) + outcome.get("_inside_s", 0.0)
        if outcome["verdict"] not in (schema.CORRECT, schema.INFRA_ERROR):
            result.update(verdict=outcome["verdict"], timing=None, flags=[],
                          message=f"at the hidden world size W={W}: {outcome.get('message', '')}")
            result["trials"] = result.get("trials", []) + [dict(t, world_size=W) for t in outcome.get("trials", [])]
    result["hidden_world_size"] = record


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
    if not 1 <= cfg.pairs <= pairs.MAX_PAIRS:
        raise BadRequest(f"pairs must be between 1 and {pairs.MAX_PAIRS}, not {cfg.pairs}")
    if cfg.seeds is not None and (len(cfg.seeds) < cfg.trials + 1 or any(
            not isinstance(s, int) or not PUBLIC_SEED_BIT <= s < 2 * PUBLIC_SEED_BIT for s in cfg.seeds)):
        raise BadRequest(f"explicit seeds must be at least trials + 1 = {cfg.trials + 1} public seeds (bit 62 set)")
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


def _static_checks(source: Optional[str], cfg: Config, filename: str = "") -> Optional[dict]:
    if source is None:
        return None
    violation = policy.scan(source, cfg.multicast_allowed)
    if violation:
        return {"verdict": schema.POLICY_VIOLATION, "message": violation.message()}
    unsupported = policy.unsupported_backend(filename, source)
    if unsupported:  # a backend whose runtime is not shipped: the file cannot build here (docs/dtype.md, backends)
        return {"verdict": schema.COMPILE_ERROR, "message": unsupported}
    try:
        compile(source, "candidate.py", "exec")
    except SyntaxError as exc:
        return {"verdict": schema.COMPILE_ERROR, "message": f"SyntaxError: {exc.msg} (line {exc.lineno})"}
    return None


PUBLIC_SEED_BIT = schema.PUBLIC_SEED_BIT  # set in every published seed; never in a seed the judge draws


def _seeds(cfg: Config) -> list[int]:
    if cfg.seeds is not None:
        return list(cfg.seeds[:cfg.trials]) + [cfg.seeds[-1]]
    rng = random.Random(cfg.seed) if cfg.seed is not None else random.SystemRandom()
    return [rng.getrandbits(62) for _ in range(cfg.trials + 1)]  # the last one re-checks after timing


# --- one attempt ------------------------------------------------------------------------------------------------------

def _run_once(prob, candidate: str, cfg: Config, seeds: list[int], base: dict, pool=None) -> dict:
    result = dict(base, trials=[], flags=[], logs=[], timing=None)
    ref = cand = None
    pair = None
    # Where the wall time goes (start: launch, or taking a warm spare, to every rank ready with the job loaded; judge:
    # trials and timing; close: teardown), so the overhead benchmark can say what to shorten.
    phases: dict = {}
    began = time.monotonic()
    spare = workdir = None
    try:
        spare = pool.take(cfg) if pool is not None else None
        workdir = spare.workdir if spare else warm.make_workdir()
        if spare:
            ref, cand = spare.ref, spare.cand
        else:
            common = dict(world_size=cfg.world_size, device=cfg.device, problem=str(prob.id), M=cfg.M, N=cfg.N,
                          dtype=cfg.dtype, reduced=cfg.reduced)
            ref = RankGroup("ref", candidate="reference", workdir=os.path.join(workdir, "ref"), trusted=True,
                            **common)
            cand = RankGroup("cand", candidate=candidate, workdir=os.path.join(workdir, "cand"),
                             trusted=candidate == "reference" or candidate.startswith("null:"), isolate=cfg.sandbox,
                             required=cfg.sandbox_required, **common)
        pair = Pair(prob, ref, cand, cfg, bystanders=pool)
        outcome = pair.start()
        if outcome is None and spare:
            outcome = pair.load(candidate, shape=dict(M=cfg.M, N=cfg.N, dtype=cfg.dtype, reduced=cfg.reduced))
        phases["start"] = time.monotonic() - began
        if outcome is None:
            outcome = pair.judge(seeds)
            if cfg.profile_dir and outcome.get("verdict") in (schema.CORRECT, schema.INCORRECT):
                from evaluator import profiling
                outcome["profile"] = profiling.record(pair, seeds[0], cfg.profile_dir)
        result.update(outcome)
        result["environment"] = dict(pair.environment, warm_start=spare is not None)
        result["_inside_s"] = pair.inside_s
        phases["judge"] = time.monotonic() - began - phases["start"]
    except sandbox.SandboxUnavailable as exc:  # before any candidate code ran; retrying would not help
        result.update(verdict=schema.INFRA_ERROR, message=f"sandbox unavailable: {exc}", _final=True)
    except Exception as exc:  # noqa: BLE001 - a harness bug or a lost process is never the candidate's fault
        result.update(verdict=schema.INFRA_ERROR, message=f"judge failure: {type(exc).__name__}: {exc}")
    finally:
        closing = time.monotonic()
        close_all([cand, ref])
        phases["close"] = time.monotonic() - closing
        if cand is not None and cand.build_dir:
            # Compiling is the candidate's start-up and first trial, never a timed call; reported on its own.
            result["build"] = cand.build_report()
            phases["build"] = result["build"]["compile_s"]
        result["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
        if pair is not None and pair.spent:
            parts = dict(pair.spent)
            if "judge" in phases:  # the rest: the judge's own bookkeeping, pausing and resuming the groups
                parts["other"] = phases["judge"] - sum(parts.values())
            # To 0.1 ms, not to the phases' 1 ms: a small problem's reading and comparing are well under 1 ms over all
            # its checks (CPU, 64 x 32 at W = 2: 0.5-1.5 ms), and a part rounded to 0 reads as one never measured.
            result["phases_s"]["judge_parts"] = {k: round(v, 4) for k, v in sorted(parts.items())}
        if cand is not None:
            result["logs"] = cand.logs()
            if cand.sandbox is not None:
                notes = cand.sandbox_notes()
                notes["cleanup"] = cand.sandbox_report
                result.setdefault("environment", {})
                result["environment"] = dict(result["environment"] or {}, sandbox=notes)
        if ref is not None and result.get("verdict") == schema.INFRA_ERROR:
            result["logs"] += ref.logs()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    failed_command = result.pop("_reference_failed", None)
    if failed_command is not None and result.get("verdict") == schema.INFRA_ERROR:
        _blame(prob, cfg, failed_command, result)
    return result


def _blame(prob, cfg: Config, command: dict, result: dict) -> None:
    """The reference failed while the candidate ran beside it. Run the same command on a fresh reference group with
    no candidate: if it passes there, the candidate broke it (killed it, took the GPU's memory, ...), which is the
    candidate's fault, not the platform's (an infra_error would be retried and never count against it)."""
    workdir = tempfile.mkdtemp(prefix="pkb-blame-")
    group = None
    try:
        group = RankGroup("ref", cfg.world_size, cfg.device, str(prob.id), "reference", os.path.join(workdir, "ref"),
                          cfg.M, cfg.N, cfg.dtype, cfg.reduced, True)
        group.collect(cfg.startup_timeout_s)
        if command.get("cmd") != "noop":  # "noop": it failed while starting up
            group.command(command, (cfg.timeout_s or prob.timeout_s) * 2)
    except Exception as exc:  # noqa: BLE001 - it fails alone too: the platform's problem after all
        result["blame"] = f"the reference fails without the candidate too ({type(exc).__name__}): infra_error"
        return
    finally:
        if group is not None:
            group.close()
        shutil.rmtree(workdir, ignore_errors=True)
    result["blame"] = "the reference passes the same command when run without the candidate"
    result.update(verdict=schema.RUNTIME_ERROR, timing=None, flags=[],
                  message="the candidate interfered with the reference ranks, which failed only while it ran "
                          f"(and pass alone): {result.get('message', '')}")


class Pair:
    """A reference group and a candidate group for one problem, judged side by side."""

    def __init__(self, prob, ref: RankGroup, cand: RankGroup, cfg: Config, bystanders=None):
        self.prob, self.ref, self.cand, self.cfg = prob, ref, cand, cfg
        self.bystanders = bystanders  # a WarmPool whose spares are stopped during timed blocks
        self.environment: dict = {}
        self.inside_s = 0.0
        self.timeout = cfg.timeout_s or prob.timeout_s
        self.build_ms = 0.0
        self.last_wall_ms = 0.0
        self.output_bytes = 0  # the largest output a reference rank held: what a candidate's file may take (outputs)
        self.held_command: Optional[dict] = None  # the trial whose outputs the reference's ranks hold
        # Where the judging phase's wall time goes, in seconds (``phases_s["judge_parts"]``): the two groups'
        # commands by kind, reading their output files, comparing. What the overhead benchmark needs to say which
        # part of a slow problem to shorten.
        self.spent: collections.Counter = collections.Counter()

    # Failures on the reference side are the platform's; on the candidate side they are the candidate's. While one
    # side runs, the other's processes are stopped (the candidate can neither watch the reference's files nor compete
    # with it, and neither side's idle threads slow the other's host).
    def _ref_command(self, cmd: dict, timeout: float) -> list[dict]:
        """Run a command on the reference with the candidate stopped (it cannot race the reference's reading of its
        files, see _check)."""
        self.cand.pause()
        try:
            return self._timed_command(self.ref, cmd, timeout)
        except GroupFailure as exc:
            # A check needs the output held from its trial: the trial is what a fresh reference re-runs alone.
            again = self.held_command if cmd.get("cmd") == "check" else cmd
            raise _Stop(schema.INFRA_ERROR, f"reference rank {exc.rank} failed ({exc.kind}): {exc.message}",
                        reference_command=None if exc.kind == schema.INFRA_ERROR else again)
        finally:
            self.cand.resume()

    def _cand_command(self, cmd: dict, timeout: float) -> list[dict]:
        """Run a command on the candidate with the reference stopped (see RankGroup.pause: same conditions for both)."""
        self.ref.pause()
        try:
            return self._timed_command(self.cand, cmd, timeout)
        except GroupFailure as exc:
            raise _Stop(_candidate_verdict(exc.kind), f"rank {exc.rank}: {exc.message}")
        finally:
            self.ref.resume()

    def _timed_command(self, group: RankGroup, cmd: dict, timeout: float) -> list[dict]:
        """The command, with the judge's wall clock around it alone (not around pausing the other group)."""
        quiet = self.bystanders is not None and cmd.get("cmd") == "time"
        if quiet:
            self.bystanders.hold()
        began = time.monotonic()
        try:
            return group.command(cmd, timeout)
        finally:
            self.last_wall_ms = (time.monotonic() - began) * 1e3
            self.spent[f"{'reference' if group is self.ref else 'candidate'}_{cmd.get('cmd')}"] += \
                self.last_wall_ms / 1e3
            if quiet:
                self.bystanders.release()

    def start(self) -> Optional[dict]:
        try:
            try:
                ready = self.ref.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                # An init failure (kind infra_error) is the platform's; a reference rank dying or hanging after it
                # could be the candidate's doing (it started at the same time): _run_once checks which.
                raise _Stop(schema.INFRA_ERROR, f"reference ranks failed to start ({exc.kind}): {exc.message}",
                            reference_command=None if exc.kind == schema.INFRA_ERROR else {"cmd": "noop"})
            self.environment = ready[0].get("env") or {}
            try:
                self.cand.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                if exc.kind == schema.INFRA_ERROR and self.cand.sandbox is not None and self.cand.sandbox.enabled:
                    raise _Stop(schema.INFRA_ERROR, f"candidate ranks could not start inside the sandbox (before any "
                                                    f"candidate code ran): rank {exc.rank}: {exc.message}")
                raise _Stop(_candidate_verdict(exc.kind, loading=True), f"rank {exc.rank}: {exc.message}")
        except _Stop as stop:
            return stop.as_result()
        return None

    def load(self, candidate: str, shape: Optional[dict] = None) -> Optional[dict]:
        """Switch both groups to this problem: a trusted self-check's next problem, or a warm spare's job (with the
        job's ``shape``; the candidate's code runs for the first time in those processes here)."""
        problem = str(self.prob.id)
        try:
            self._ref_command(self.ref.load_command(problem, "reference", shape), self.cfg.startup_timeout_s)
            self._cand_command(self.cand.load_command(problem, candidate, shape), self.cfg.startup_timeout_s)
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
                estimate = min(estimates[1:] or estimates + [self.cfg.timing_estimate_ms or math.inf])
                own = [t["reference_call_ms"] for t in trials]
                reference_estimate = min(own[1:] or own + [self.cfg.timing_reference_estimate_ms or math.inf])
                timing_doc = self._time(seeds, estimate, reference_estimate)
                kept = timing_doc.pop("_kept")
                checks, problem = self._verify_timed(kept)
                timing_doc["verified_timed_calls"] = checks
                if problem:
                    return {"verdict": schema.INCORRECT, "trials": trials, "timing": None,
                            "message": f"a timed call's output was wrong: {problem}"}
                record, _ = self._trial(len(seeds) - 1, seeds[-1], tag="post")
                record["after_timing"] = True
                trials.append(record)
                if record["verdict"] != schema.CORRECT:
                    return {"verdict": schema.INCORRECT, "trials": trials, "timing": None,
                            "message": f"outputs changed after the timed loop: {_first_mismatch(record)}"}
            hidden_note = None
            if self.cfg.hidden_shape:
                record = self._hidden_shape_trial(seeds[-1])
                if record["verdict"] == "skipped":
                    hidden_note = record
                else:
                    trials.append(record)
                    if record["verdict"] != schema.CORRECT:
                        shape = record["hidden_shape"]
                        return {"verdict": schema.INCORRECT, "trials": trials, "timing": None,
                                "message": f"at the hidden shape M={shape['M']}, N={shape['N']}: "
                                           f"{_first_mismatch(record)}"}
            flags = list(timing_doc.pop("_flags")) if timing_doc else []
            message = f"all {len(trials)} trials correct on {self.cfg.world_size} rank(s)"
            differs = _dtype_differs(trials)
            if differs:  # correct within tolerance in another floating dtype: shown, never faster (docs/dtype.md)
                flags.append(schema.FLAG_DTYPE_DIFFERS)
                message += f"; output dtype differs from the reference's ({differs}): flagged, never faster"
            out = {"verdict": schema.CORRECT, "trials": trials, "timing": timing_doc, "flags": flags,
                   "message": message}
            if hidden_note:  # asked for but not run: say so, rather than leave no trace
                out["hidden_shape"] = hidden_note
            return out
        except _Stop as stop:
            out = stop.as_result()
            out["trials"] = trials
            return out

    def _secret_seed(self, seeds: list[int], *key) -> int:
        """A seed the candidate cannot know in advance. Derived from the post-timing seed (revealed only after the
        timed loop) when the run is reproducible (``Config.seed``); drawn from the OS otherwise, and always when the
        trial seeds are public (feedback runs), since a public seed would let it compute everything ahead."""
        if self.cfg.seed is not None and getattr(self.cfg, "seeds", None) is None:
            return derive_seed(seeds[-1], *key) & ((1 << 62) - 1)
        return random.SystemRandom().getrandbits(62)

    def _hold_reference(self, cmd: dict) -> list[dict]:
        """Run a trial on the reference's ranks, which hold its outputs for the ``check`` that follows."""
        self.held_command = dict(cmd, hold=True)
        replies = self._ref_command(self.held_command, self.timeout)
        self.output_bytes = max([self.output_bytes] + [x["nbytes"] for x in replies if type(x.get("nbytes")) is int])
        return replies

    def _check(self, tag: str, directory: str, files: list[Optional[str]]) -> list[Optional[dict]]:
        """Each reference rank compares ``directory/files[rank]`` (a candidate's output; None: none on that rank) with
        the output it holds from trial ``tag``: the ranks' comparison records. The candidate is stopped meanwhile (no
        write can land while its file is read). The slowest rank's reading and comparing are counted apart from the
        rest of the command (``phases_s.judge_parts``)."""
        replies = self._ref_command({"cmd": "check", "tag": tag, "dir": directory, "files": files}, self.timeout)
        entries = [reply.get("check") for reply in replies]
        timed = [e for e in entries if e is not None]
        if timed:
            slowest = max(timed, key=lambda e: e.get("read_s", 0.0) + e.get("compare_s", 0.0))
            for part in ("read_s", "compare_s"):
                spent = slowest.get(part, 0.0)
                self.spent["read_outputs" if part == "read_s" else "compare"] += spent
                self.spent["reference_check"] -= spent
        for entry in timed:
            entry.pop("read_s", None)
            entry.pop("compare_s", None)
        return entries

    def _trial(self, index: int, seed: int, tag: str, shape: Optional[dict] = None) -> tuple[dict, float]:
        cmd = dict({"cmd": "trial", "trial": index, "seed": seed, "tag": tag}, **(shape or {}))
        ref_replies = self._hold_reference(cmd)
        cand_replies = self._cand_command(cmd, self.timeout)
        cand_wall_ms = self.last_wall_ms  # the judge's clock: what the candidate's reported call time cannot exceed
        ranks = self._check(tag, self.cand.out_dir, [f"{tag}_r{r}.pt" for r in range(self.cfg.world_size)])
        ok = all(entry["ok"] for entry in ranks)
        ref_ms, cand_ms = _call_ms(ref_replies, "ref"), min(_call_ms(cand_replies, "cand"), cand_wall_ms)
        self.build_ms = max(self.build_ms, max(float(x.get("build_ms", 0.0)) for x in ref_replies))
        self.inside_s += (ref_ms + cand_ms) / 1e3
        record = {"trial": index, "seed": seed, "verdict": schema.CORRECT if ok else schema.INCORRECT,
                  "ranks": ranks, "output_shapes": ref_replies[0].get("shapes"), "reference_call_ms": round(ref_ms, 4),
                  "candidate_call_ms": round(cand_ms, 4)}
        return record, max(ref_ms, cand_ms)

    def _hidden_shape_trial(self, seed: int) -> dict:
        """One more trial at a shape the judge draws now; a ``skipped`` record where there is none to draw or the
        reference cannot run it."""
        rng = random.Random(self._secret_seed([seed], "hidden-shape"))
        shape = {"M": _other_size(self.cfg.M, self.cfg.world_size, rng),
                 "N": _other_size(self.cfg.N, self.cfg.world_size, rng)}
        if shape == {"M": self.cfg.M, "N": self.cfg.N}:
            return {"verdict": "skipped",
                    "message": f"M={self.cfg.M}, N={self.cfg.N} are too small to draw another shape"}
        hidden_seed = self._secret_seed([seed], "hidden-trial")
        self.cand.pause()
        try:  # held and never checked: the next trial drops it
            self.ref.command({"cmd": "trial", "trial": 0, "seed": hidden_seed, "tag": "probe", "hold": True, **shape},
                             self.timeout)
        except GroupFailure:
            # The reference itself does not run at that shape: nothing to hold the candidate to.
            return {"verdict": "skipped",
                    "message": f"the reference does not run at the drawn shape M={shape['M']}, N={shape['N']}"}
        finally:
            self.cand.resume()
        record, _ = self._trial(0, hidden_seed, tag="hidden", shape=shape)
        record["hidden_shape"] = shape
        return record

    def _time(self, seeds: list[int], estimate_ms: float, reference_estimate_ms: Optional[float] = None) -> dict:
        """The timing blocks. ``estimate_ms``: the slower side's call in the trials (how many calls fit a block);
        ``reference_estimate_ms``: the reference's alone (where the spin starts: trusted)."""
        cfg = self.cfg
        # With K pairs each pair times 1/K of one pair's calls: the pairs' offsets, not the calls within a pair, are
        # what limits precision (evaluator/pairs.py), and K pairs then cost about one pair's timing, plus start-ups.
        per_block = cfg.budget_ms() / cfg.blocks / cfg.pairs
        least = 3 if cfg.device == "cpu" else 10
        fits = per_block / max(estimate_ms + self.build_ms, 1e-3)
        iters = int(min(max(least, MAX_ITERS // cfg.pairs), max(least, fits)))
        ref_blocks, cand_blocks, walls = [], [], {"ref": [], "cand": []}
        host_bound = {"ref": [], "cand": []}
        spin_short = {"ref": [], "cand": []}  # a diagnostic (rank_worker.time): shares of calls, per block
        kept, sets = [], 0
        verify = not self.cand.trusted  # an A/A self-check (reference as the candidate) needs no kept outputs
        # A fresh seed per block, unknown to the candidate until the block starts: nothing can be computed ahead, in
        # trials or in start-up.
        block_seeds = [self._secret_seed(seeds, "timing-block", b) for b in range(cfg.blocks + cfg.probe_blocks)]
        # Spin long enough for the host to queue a call ahead of the start event (see rank_worker.time). In block 0
        # each rank lengthens it to what its own host needs; from block 1 on both sides spin exactly the same, so the
        # spin cancels in the cross-check of wall clocks: the most the reference's ranks have wanted, or what the
        # candidate's wanted (a candidate whose launches are slower should still be timed on the GPU, not on its host)
        # up to CANDIDATE_SPIN_SHARE times that. The cap: the GPU is idle but for one spinning thread while the host
        # queues the call, and work a candidate starts on another stream in that time is seen by neither the events
        # nor the wall clock (docs/threat-model.md), so the candidate must not lengthen it at will.
        # From the reference's call time, not the slower side's: a candidate's trial replies could otherwise set it.
        basis_ms = estimate_ms if reference_estimate_ms is None else reference_estimate_ms
        spin_us = min(2000.0, max(20.0, basis_ms * 1e3)) if cfg.device == "cuda" else 0.0
        wanted = {"ref": 0.0, "cand": 0.0}
        spins = []
        probe = {"ref": [], "cand": [], "walls": {"ref": [], "cand": []}}

        def block(b: int, n: int, warmup: int, spin: float, exact: bool, is_probe: bool = False) -> None:
            nonlocal sets
            cmd = {"cmd": "time", "trial": 0, "seed": block_seeds[b], "iters": n, "warmup": warmup,
                   "spin_us": spin, "spin_exact": exact, "replace_memory": cfg.replace_memory}
            if verify:  # both sides keep one timed output (same harness cost); only the candidate's is checked
                cmd["tag"] = f"b{b}"
            timeout = self.timeout + (n + warmup) * (5 * estimate_ms + 2 * self.build_ms) / 1e3
            # Alternate which side goes first so neither always follows the other.
            order = (("ref", self._ref_command), ("cand", self._cand_command))
            for side, run in (order if b % 2 == 0 else order[::-1]):
                replies = run(cmd, timeout)
                wall_ms = self.last_wall_ms
                # The kept output leaves the rank in a command of its own, off the wall clock just read: its write
                # varies with its size and the page cache, and with 12 calls a block (8 pairs) 2 ms of that is enough
                # to read as a candidate's unexplained time (the cross-check). The reference's copy is dropped: only
                # the candidate's is checked. Sent without verification too: the rank hands a large cache back there.
                run({"cmd": "kept", "tag": cmd["tag"] if verify and side == "cand" else None}, self.timeout)
                samples = _samples(replies, n, side)
                wanted[side] = max(wanted[side], _spin_wanted(replies))
                if is_probe:  # host-paced by design: no evidence of a host-bound call, and not in the speedup
                    probe[side].append(samples)
                    probe["walls"][side].append(wall_ms / (n + warmup))
                else:
                    host_bound[side].append(_host_share(replies, side))
                    spin_short[side].append(max(_share(x.get("spin_short")) for x in replies))
                    (ref_blocks if side == "ref" else cand_blocks).append(samples)
                    walls[side].append(wall_ms / (n + warmup))
                self.inside_s += (sum(samples) + warmup * statistics.median(samples)) / 1e3
                if side == "cand":
                    if verify:
                        kept.extend(self._collect_kept(cmd, replies, b))
                    # Shown only (distinct_input_sets_per_block): a rank's value that is not a count is ignored, so
                    # that a forged one cannot end the run as a platform failure.
                    sets = max([sets] + [x["sets"] for x in replies
                                         if type(x.get("sets")) is int and x["sets"] >= 0])

        for b in range(cfg.blocks):
            trusted = max(spin_us, wanted["ref"])
            block_spin = max(trusted, min(wanted["cand"], CANDIDATE_SPIN_SHARE * trusted))
            spins.append(block_spin)
            block(b, iters, max(3, iters // 5) if b == 0 else 1, block_spin, b > 0)
        # Probe blocks: no spin at all, so nothing a candidate queues can run unseen beside it, and the judge's own
        # clock then bounds what each call really costs (docs/threat-model.md, "Work beside the spin"). Their
        # samples are host-paced and stay out of the speedup; _probe_check compares their walls with the claims of
        # the spun blocks (PROBE_CALLS_FACTOR).
        probe_iters = int(iters * min(PROBE_CALLS_FACTOR, max(1.0, (spins[-1] / 1e3 + estimate_ms)
                                                               / (estimate_ms + 0.1))))

        # Each block's spin per call of the blocks the cross-check reads (not block 0): one warm-up, no spin.
        spins_ms = [x / 1e3 * iters / (iters + 1) for x in spins]
        doc = _timing_document(ref_blocks, cand_blocks, walls, cfg, self.prob, self.environment, calls=iters + 1,
                               host_bound={side: statistics.median(v) for side, v in host_bound.items()},
                               spin_ms=statistics.median(spins_ms[1:] or spins_ms), spins_ms=spins_ms,
                               reference_spin_short=spin_short["ref"])
        # The probe blocks guard "faster" (they cost a noticeable share of a judgement): a pair whose spun blocks
        # cannot make the candidate faster skips them, unless a calibration run asks for them always. They do not
        # change the speedup, so the document above only takes their check (_add_probe).
        probing = cfg.probe_blocks > 0 and (cfg.probe_always or _could_be_faster(doc, cfg))
        for p in range(cfg.probe_blocks if probing else 0):
            block(cfg.blocks + p, probe_iters, 1, 0.0, True, is_probe=True)
        if probing:
            probe["calls"] = probe_iters + 1
            _add_probe(doc, ref_blocks, cand_blocks, probe, cfg)
        elif cfg.probe_blocks:
            doc["probe_skipped"] = ("the spun blocks cannot make this candidate faster (speedup "
                                    f"{doc['speedup']}, interval {doc['speedup_ci']}): nothing for the probe to guard")
        doc.update(distinct_input_sets_per_block=sets, calls_per_block=iters + 1, _kept=kept,
                   estimate_ms=round(estimate_ms, 6), reference_estimate_ms=round(basis_ms, 6),
                   spin_us_per_block=[round(x, 1) for x in spins],
                   spin_short_per_block={"reference": spin_short["ref"], "candidate": spin_short["cand"]})
        return doc

    def _collect_kept(self, cmd: dict, replies: list[dict], block: int) -> list[dict]:
        """Take the outputs each rank kept in this block out of the candidate's reach right away (a copy in the
        reference's directory, made with the candidate stopped), to be checked after the timed loop."""
        out = []
        began = time.monotonic()
        self.cand.pause()  # once for all ranks' files: no write can land while they are copied
        try:
            for r, reply in enumerate(replies):
                call = reply.get("kept_call")
                if not isinstance(call, int) or not cmd["warmup"] <= call < cmd["warmup"] + cmd["iters"]:
                    raise _Stop(schema.RUNTIME_ERROR, f"rank {r} reported no valid kept call for timing block {block}")
                name = f"{cmd['tag']}_r{r}.pt"
                try:
                    outputs.take(os.path.join(self.cand.out_dir, name), os.path.join(self.ref.out_dir, f"kept_{name}"),
                                 max_bytes=outputs.size_limit(self.output_bytes))
                except Exception as exc:  # noqa: BLE001
                    raise _Stop(schema.INCORRECT, f"rank {r}: the output of timed call {call} of block {block} is "
                                                  f"unreadable: {exc}")
                out.append({"rank": r, "block": block, "call": call, "file": f"kept_{name}",
                            "seed": timing_set_seed(cmd["seed"], call)})  # the judge's own derivation, not the reply's
        finally:
            self.cand.resume()
            self.spent["take_kept"] += time.monotonic() - began
        return out

    def _verify_timed(self, kept: list[dict]) -> tuple[int, Optional[str]]:
        """Run the reference on the inputs of every kept timed call and compare."""
        by_seed: dict[int, list[dict]] = {}
        for item in kept:
            by_seed.setdefault(item["seed"], []).append(item)
        checks = 0
        for n, (seed, items) in enumerate(by_seed.items()):
            self._hold_reference({"cmd": "trial", "trial": 0, "seed": seed, "tag": f"v{n}"})
            files: list[Optional[str]] = [None] * self.cfg.world_size
            for item in items:
                files[item["rank"]] = item["file"]
            entries = self._check(f"v{n}", self.ref.out_dir, files)
            for item in items:
                entry = entries[item["rank"]]
                checks += 1
                if not entry["ok"]:
                    where = entry.get("where") or "output"
                    return checks, (f"block {item['block']}, call {item['call']}, rank {item['rank']}, {where}: "
                                    f"{entry.get('message')}")
        return checks, None

    def close(self):
        close_all([self.cand, self.ref])


def _other_size(size: int, world_size: int, rng: random.Random) -> int:
    """A size between size/2 and size, a multiple of 16*W (what sharded dimensions need), different from ``size``."""
    unit = 16 * max(1, world_size)
    choices = [k * unit for k in range(1, size // unit + 1) if k * unit != size and 2 * k * unit >= size]
    return rng.choice(choices) if choices else size


class _Stop(Exception):
    def __init__(self, verdict: str, message: str, reference_command: Optional[dict] = None):
        super().__init__(message)
        self.verdict, self.message = verdict, message
        self.reference_command = reference_command

    def as_result(self) -> dict:
        out = {"verdict": self.verdict, "message": self.message}
        if self.reference_command is not None:
            out["_reference_failed"] = self.reference_command
        return out


def _dtype_differs(trials: list[dict]) -> str:
    """The comparisons' notes of floating outputs that passed in another dtype (evaluator/compare.py), first one."""
    notes = list(dict.fromkeys(note for t in trials for entry in t.get("ranks") or [] if entry
                               for note in entry.get("dtype_differs") or []))
    return notes[0] + (f" and {len(notes) - 1} more" if len(notes) > 1 else "") if notes else ""


def _candidate_verdict(kind: str, loading: bool = False) -> str:
    if kind in (schema.COMPILE_ERROR, schema.RUNTIME_ERROR, schema.INCORRECT, schema.INFRA_ERROR, schema.TIMEOUT):
        return kind
    if kind == "exited":
        return schema.RUNTIME_ERROR
    return schema.RUNTIME_ERROR  # protocol violations and anything unknown


# From block 1 on, a candidate's wish can lengthen the spin both sides share to at most this many times the
# reference's (see Pair._time).
CANDIDATE_SPIN_SHARE = 2.0


def _is_number(value) -> bool:
    """A finite int or float, not a bool: what a rank's numeric reply fields must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _share(value) -> float:
    """A rank's reported share of calls, or 0.0 when it is not a number in [0, 1] (a candidate's rank may say
    anything; the value is shown, never used for a verdict)."""
    return float(value) if _is_number(value) and 0.0 <= value <= 1.0 else 0.0


def _reported(values: list, side: str, what: str, valid=lambda v: True) -> list:
    """The ranks' values of one reply field; any that is not a number (or not ``valid``) makes the reply malformed:
    the candidate's fault on its side (as malformed samples are, _samples), never an infra_error it could cause at
    will."""
    if not all(_is_number(v) and valid(v) for v in values):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR,
                    f"{side} ranks returned a malformed {what}")
    return values


def _call_ms(replies: list[dict], side: str) -> float:
    """The slowest rank's call time in a trial reply, a number >= 0."""
    return float(max(_reported([x.get("ms", 0.0) for x in replies], side, "trial time", lambda v: v >= 0)))


def _host_share(replies: list[dict], side: str) -> float:
    """The largest share of host-paced calls a side's ranks report, clamped to [0, 1]."""
    return min(1.0, max(0.0, max(_reported([x.get("host_bound") or 0.0 for x in replies], side,
                                           "host-bound share"))))


def _spin_wanted(replies: list[dict]) -> float:
    """The longest spin a side's ranks asked for (their host time to queue a call), within the ranks' own cap;
    anything that is not a finite number counts as no wish."""
    wishes = [x.get("spin_wanted_us") for x in replies]
    wishes = [float(w) for w in wishes if isinstance(w, (int, float)) and math.isfinite(w) and w > 0]
    return min(SPIN_MAX_US, max(wishes, default=0.0))


def _samples(replies: list[dict], iters: int, side: str) -> list[float]:
    samples = replies[0].get("samples")
    if not isinstance(samples, list) or len(samples) != iters or not all(isinstance(x, (int, float)) for x in samples):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR,
                    f"{side} rank 0 returned malformed timing samples")
    if any(not (x >= 0.0) or x == float("inf") for x in samples):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR, f"{side} reported negative times")
    return [float(x) for x in samples]


def _first_mismatch(record: dict) -> str:
    for entry in record["ranks"]:
        if not entry["ok"]:
            where = entry.get("where") or "output"
            return f"rank {entry['rank']}, {where}: {entry.get('message')}"
    return "mismatch"


# Relative offset between two process groups running identical code, measured by A/A runs (see _timing_document).
# CUDA: the one-sided bound on one pair's offset from the pairs' calibration, exp(2.65 x 0.030) - 1 = 8.3%
# (docs/calibration.md, ONE_PAIR_FLOOR). A 5% difference cannot be told from a change of process pair in one judged
# run: that takes several pairs (Config.pairs). CPU: see schema.py.
PROCESS_NOISE_FLOOR = pairs.ONE_PAIR_FLOOR
# A call is host-bound when its GPU work is already finished by the time the host returns from it (a host sync
# inside, or launches slower than the GPU runs them): then the events time the host's pace, which differs between
# processes far more than GPU work does (docs/calibration.md, HOST_PACED_FLOOR). Such timings get this wider
# floor, and say so; so does every CPU timing.
HOST_BOUND_NOISE_FLOOR = pairs.HOST_PACED_FLOOR
HOST_BOUND_SHARE = 0.2  # of a side's timed calls (median over blocks)
# A reference block with at least this share of spun-short calls timed the reference's host (_timing_document): the
# shares cluster low and high, and the high blocks' medians are far above the call's (docs/calibration.md).
SPIN_SHORT_BLOCK_SHARE = 0.5


def blocks_spun_short(shares: Optional[list[float]]) -> list[int]:
    """The blocks (indices) whose share of spun-short calls says they timed the host (SPIN_SHORT_BLOCK_SHARE)."""
    return [b for b, share in enumerate(shares or []) if share >= SPIN_SHORT_BLOCK_SHARE]


def noise_floor(device: str, host_bound: bool) -> float:
    """How far one pair's interval is widened (each side, relative) for the offset of its process pair."""
    return max(PROCESS_NOISE_FLOOR[device], HOST_BOUND_NOISE_FLOOR if host_bound else 0.0)


def _timing_document(ref_blocks, cand_blocks, walls, cfg: Config, prob=None, environment: Optional[dict] = None,
                     calls: Optional[int] = None, host_bound: Optional[dict] = None,
                     spin_ms: float = 0.0, probe: Optional[dict] = None,
                     spins_ms: Optional[list[float]] = None,
                     reference_spin_short: Optional[list[float]] = None) -> dict:
    ref_all = [x for block in ref_blocks for x in block]
    cand_all = [x for block in cand_blocks for x in block]
    ref_ms, cand_ms = stats.median(ref_all), stats.median(cand_all)
    raw_low, raw_high = stats.bootstrap_speedup_ci(ref_blocks, cand_blocks)
    # Two process groups running identical code on the same GPU still differ by several percent, in either direction
    # and differently for each new pair (the same problem read 0.96x in one pass and 1.05x in the next): measured by
    # A/A runs on an H200 (docs/calibration.md). The bootstrap, within one pair, cannot see that offset, so the
    # interval is widened by it; "faster" must clear it too.
    host_bound = host_bound or {}
    is_host_bound = cfg.device == "cuda" and max(host_bound.values(), default=0.0) >= HOST_BOUND_SHARE
    floor = noise_floor(cfg.device, is_host_bound)
    low, high = pairs.widen(raw_low, raw_high, floor)
    crosscheck = _crosscheck(ref_blocks, cand_blocks, walls, cfg, calls, spin_ms, spins_ms)
    flags = [schema.FLAG_TIMING_CROSSCHECK] if crosscheck["suspect"] else []
    light = None
    if prob is not None:
        ceilings = cfg.light_ceilings or physics.ceilings_for(cfg.device, (environment or {}).get("gpus"))
        light = physics.check(prob, cfg.M, cfg.N, cfg.world_size, cfg.dtype, cand_ms, ceilings)
        if light["violated"]:
            flags.append(schema.FLAG_FASTER_THAN_LIGHT)
    ranked = cfg.device == "cuda" and not flags
    # Reference blocks whose calls mostly began before the host had queued them (rank_worker.time, spin_short): the GPU
    # waited for the reference's host inside the timed window, so those blocks timed its launches, not its kernels,
    # and the reference read slower than it is (identical code once read 5x "faster": docs/calibration.md,
    # SPIN_SHORT_BLOCK_SHARE). The reference's share
    # is trusted (a candidate's is not read here: its own short spins only make it look slower), and it is tied to
    # no interval width, so "faster" is withheld outright.
    short_blocks = blocks_spun_short(reference_spin_short)
    doc = {
        "reference_ms": round(ref_ms, 6), "candidate_ms": round(cand_ms, 6),
        "speedup": round(ref_ms / cand_ms, 4) if cand_ms > 0 else None,
        "speedup_ci": [round(low, 4), round(high, 4)], "faster": bool(low > 1.0 and not flags and not short_blocks),
        "reference_blocks_spun_short": short_blocks,
        "bootstrap_ci": [round(raw_low, 4), round(raw_high, 4)], "process_noise_floor": floor,
        "host_bound": is_host_bound, "host_bound_share": {"reference": host_bound.get("ref"),
                                                          "candidate": host_bound.get("cand")},
        "samples": len(cand_all), "reference_samples": len(ref_all), "blocks": len(ref_blocks),
        "ranked": ranked, "method": "cuda_events" if cfg.device == "cuda" else "wall_clock",
        "crosscheck": crosscheck, "speed_of_light": light, "_flags": flags,
    }
    if probe and probe["ref"] and probe["cand"]:
        _add_probe(doc, ref_blocks, cand_blocks, probe, cfg)
    return doc


def _add_probe(doc: dict, ref_blocks, cand_blocks, probe: dict, cfg: Config) -> None:
    """Add the probe blocks' check (_probe_check) to a pair's timing document; a suspect probe flags it as the
    cross-check of the spun blocks does (not faster, not ranked)."""
    crosscheck = doc["crosscheck"]
    crosscheck["probe"] = _probe_check(ref_blocks, cand_blocks, probe, cfg)
    if crosscheck["probe"]["suspect"] and not crosscheck["suspect"]:
        crosscheck["suspect"] = True
        doc["_flags"].insert(0, schema.FLAG_TIMING_CROSSCHECK)
        doc["faster"] = doc["ranked"] = False


def _claimed_ms(blocks) -> float:
    """What a side's spun blocks say a call costs: the median of the block medians, block 0 (warm-up, compilation)
    left out when there are enough blocks. The cross-checks read this statistic, the one the speedup is made of."""
    skip = 1 if len(blocks) > 2 else 0
    return statistics.median([statistics.median(b) for b in blocks[skip:]])


# The probe check's allowance per call, the largest of: a floor, PROBE_RANGE_FACTOR times the spread of the
# reference's own probe blocks (trusted: a candidate that varies its blocks cannot widen it), a per-block share
# spread over the probe block's calls, and a share of the candidate's own cost per call. The judge's wall around a
# block varies by milliseconds with the harness's own work (building the block's inputs, barriers), whatever the call.
# The floor is 3 SD of the honest excess where it is quiet; 1.7 x the range of three blocks is ~3 sigma of the
# difference of two medians (docs/calibration.md, PROBE_FLOOR_MS). Across K pairs the mean excess is held to the
# median noise allowance / sqrt(K), at least 0.25 ms (pairs.probe_pooled).
PROBE_FLOOR_MS = {"cuda": 0.51, "cpu": 9.0}
PROBE_RANGE_FACTOR = 1.7
PROBE_BLOCK_MS = {"cuda": 2.0, "cpu": 30.0}
PROBE_SHARE = 0.25


def probe_noise_ms(ref_walls: list[float], calls: int, device: str) -> float:
    """The probe check's noise allowance per call, from the reference's probe walls per call (one per block)."""
    return max(PROBE_FLOOR_MS[device], PROBE_RANGE_FACTOR * (max(ref_walls) - min(ref_walls)),
               PROBE_BLOCK_MS[device] / max(1, calls))


def _could_be_faster(doc: dict, cfg: Config) -> bool:
    """Whether a pair's spun blocks alone could make the candidate "faster": its own interval above 1.0 when it is
    the only pair; with K pairs, any speedup above 1.0 (the combined interval is narrower than a pair's). Work
    hidden beside the spin lowers the candidate's claim, so a candidate that hides work is always probed."""
    if not doc.get("speedup"):
        return False
    return doc["speedup"] > 1.0 if cfg.pairs > 1 else doc["speedup_ci"][0] > 1.0


def _probe_check(ref_blocks, cand_blocks, probe: dict, cfg: Config) -> dict:
    """Hold each side's claim (its spun blocks' events) to the judge's own clock in blocks with no spin.

    In a spun block the GPU waits on a one-thread spin while the host queues the call; work a candidate queues on
    another stream runs beside that spin, and neither the events nor the wall clock (which holds the spin on both
    sides) see it. A probe block has no spin, so such work shows in the judge's wall clock, whatever the candidate
    reports there and whether or not it behaves differently in probe blocks (it can tell them apart). The check:
    the candidate's wall per call in the probe block, less what it claims per call in the spun blocks, must not
    exceed the same difference for the reference by more than the allowance. For the reference that difference is
    the harness's own cost per call plus whatever of the call is paced by its host rather than its GPU.

    What it cannot tell apart: a candidate whose launches take longer than its GPU work, by more than the
    reference's do, reads like one that hides work; and work hidden under the candidate's own launch time (calls
    host-paced at zero spin) is not seen at all.
    """
    ref_claim, cand_claim = _claimed_ms(ref_blocks), _claimed_ms(cand_blocks)
    ref_wall = statistics.median(probe["walls"]["ref"])
    cand_wall = statistics.median(probe["walls"]["cand"])
    ref_reported = statistics.median([statistics.median(b) for b in probe["ref"]])
    harness_ms = max(0.0, ref_wall - ref_reported)  # the reference's own: trusted
    excess = (cand_wall - cand_claim) - (ref_wall - ref_claim)
    share = PROBE_SHARE * max(0.0, cand_wall - harness_ms)
    noise = probe_noise_ms(probe["walls"]["ref"], probe.get("calls") or 1, cfg.device)
    allowance = max(noise, share)
    return {"reference_wall_per_call_ms": round(ref_wall, 4), "candidate_wall_per_call_ms": round(cand_wall, 4),
            "reference_claim_ms": round(ref_claim, 4), "candidate_claim_ms": round(cand_claim, 4),
            "reference_reported_ms": round(ref_reported, 4),
            "candidate_reported_ms": round(statistics.median([statistics.median(b) for b in probe["cand"]]), 4),
            "excess_ms": round(excess, 4), "allowance_ms": round(allowance, 4), "noise_ms": round(noise, 4),
            "share_ms": round(share, 4),
            "calls": probe.get("calls"), "blocks": len(probe["walls"]["cand"]), "suspect": bool(excess > allowance),
            # each probe block's wall per call (the noise the allowance is set from, for re-judging stored runs)
            "walls_ms": {"reference": [round(w, 4) for w in probe["walls"]["ref"]],
                         "candidate": [round(w, 4) for w in probe["walls"]["cand"]]}}


# The spun cross-check's allowance also covers the reference's own spread: CROSSCHECK_RANGE_FACTOR times the range of
# its per-call walls (spin removed) over the blocks the check reads. Both sides run the same harness, so an honest
# candidate's overhead differs from the reference's by about as much as the reference's differs from block to block.
# With five blocks a side the difference of the two medians has an SD of about 0.8 sigma and the range of five is
# about 2.3 sigma, so 1 x range is ~3 sigma; without it honest A/A runs were flagged although retimed
# (docs/calibration.md, CROSSCHECK_RANGE_FACTOR).
CROSSCHECK_RANGE_FACTOR = 1.0


def crosscheck_noise_ms(ref_walls: list[float], spins_ms: Optional[list[float]] = None) -> float:
    """The reference's block-to-block spread of its per-call wall (blocks as the cross-check reads them), with each
    block's spin per call taken out: the judge changes the spin between blocks, for both sides alike."""
    spins_ms = spins_ms if spins_ms and len(spins_ms) == len(ref_walls) else [0.0] * len(ref_walls)
    own = [w - s for w, s in zip(ref_walls, spins_ms)]
    return CROSSCHECK_RANGE_FACTOR * (max(own) - min(own)) if len(own) > 1 else 0.0


def _crosscheck(ref_blocks, cand_blocks, walls, cfg: Config, calls: Optional[int] = None,
                spin_ms: float = 0.0, spins_ms: Optional[list[float]] = None) -> dict:
    """Compare what each side reported with the judge's own clock around each block.

    The per-call wall time seen here minus the reported time is the harness overhead (barrier, sync, pipes, building
    the block's inputs). The reference and candidate ranks run the same harness on the same inputs, so their
    overheads should agree; a candidate whose unexplained time is much larger than the reference's did work outside
    its reported window (side streams, threads, processes, work moved into warm-up or into one batched call, forged
    clocks or events), and its timing is flagged and never ranked. The reported time is the block's median, the
    statistic the speedup is made of: work piled into a few calls raises the mean but not the median, and is caught.

    ``spin_ms``: the GPU spin per call the judge asked both sides for (rank_worker.time). It is in both walls
    and cancels in the difference, but it must not grow the allowance: a ~1 ms spin once let 0.67 ms of side-stream
    work per call pass (docs/calibration.md). The judge's own number is used, never what a rank reports.
    ``spins_ms``: each block's spin per call, for the reference's own spread (crosscheck_noise_ms).
    """
    skip = 1 if len(ref_blocks) > 2 else 0  # the first block includes warm-up and compilation, as in _claimed_ms

    def overhead(blocks, wall):
        return statistics.median(wall[skip:]) - _claimed_ms(blocks), statistics.median(wall[skip:])

    ref_over, ref_wall = overhead(ref_blocks, walls["ref"])
    cand_over, cand_wall = overhead(cand_blocks, walls["cand"])
    # Allowance: a per-call floor, a per-block one spread over the block's calls (start-up of the block, building
    # its inputs, replies: noisy on a loaded CPU host), a quarter of the candidate's own per-call wall time less the
    # judge's spin, and the reference's own spread (trusted: a candidate that varies its blocks cannot widen it).
    floor_ms = 0.05 if cfg.device == "cuda" else 2.0
    block_ms = 2.0 if cfg.device == "cuda" else 30.0
    noise = crosscheck_noise_ms(walls["ref"][skip:], spins_ms[skip:] if spins_ms else None)
    allowance = max(floor_ms, block_ms / max(1, calls or 1), 0.25 * max(0.0, cand_wall - spin_ms), noise)
    unexplained = cand_over - max(ref_over, 0.0)
    suspect = unexplained > allowance
    return {"reference_wall_per_call_ms": round(ref_wall, 4), "candidate_wall_per_call_ms": round(cand_wall, 4),
            "reference_overhead_ms": round(ref_over, 4), "candidate_overhead_ms": round(cand_over, 4),
            "unexplained_ms": round(unexplained, 4), "allowance_ms": round(allowance, 4), "noise_ms": round(noise, 4),
            "spin_ms": round(spin_ms, 4), "suspect": bool(suspect),
            # Each block's wall and reported median per call (block 0 included, though not read above): whether an
            # honest pair's excess sits in one block or in all of them says where to look for its cause.
            "blocks_ms": {side: {"wall": [round(w, 4) for w in walls[key]],
                                 "reported": [round(statistics.median(b), 4) for b in blocks]}
                          for side, key, blocks in (("reference", "ref", ref_blocks),
                                                    ("candidate", "cand", cand_blocks))},
            "blocks_spin_ms": [round(x, 4) for x in spins_ms] if spins_ms else None}
