"""The trusted judge: evaluates one candidate for one problem on W ranks and returns the result document.

Protocol (one job): start the reference ranks and the candidate ranks as two separate process groups; for each of
``trials`` fresh seeds, run the reference (its ranks hold their outputs on their devices), run the candidate (its ranks
write theirs to files), and have each reference rank compare the candidate's file with what it holds
(evaluator/rank/outputs.py); then time both sides in alternating blocks (reference block, candidate block, ...), each
block on freshly built inputs with rotating clones of the timed argument; then one more trial on a new seed to re-check
the candidate's outputs after the timed loop. The candidate never sees expected outputs: they never leave the
reference's processes, which are stopped whenever the candidate's ranks run.

Here: ``evaluate`` (the attempts and their retries, more timing pairs, the hidden world size) and the request's
preparation; one attempt (the two groups, the pair, the clean-up, whose fault a failure is):
evaluator/judge/attempt.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import time

import torch

import problems
from evaluator.contract import schema, verdict
from evaluator.judge import hidden_world, policy, shared_device
from evaluator.judge.attempt import (
    _devices,
    _run_once,
    attribute,  # noqa: F401 - the attribution rule, cited as evaluation.attribute
)
from evaluator.judge.config import BadRequest, Config
from evaluator.timing import pairs
from evaluator.timing.calibration import HOST_BOUND_NOISE_FLOOR
from problems.base import derive_seed


def evaluate(problem, candidate: str, world_size: int, device: str = "cpu", pool=None, **options) -> dict:
    """Judge ``candidate`` (a path, or "reference" for an A/A run) on ``problem`` (id or stem); see
    evaluator.contract.schema. ``pool``: an evaluator.process.warm.WarmPool whose started groups the first attempt uses
    (a retry starts cold). ``hidden_world_size="auto"``: the judge draws it (evaluator/judge/hidden_world.py; none where
    there is no other)."""
    hidden_auto = options.get("hidden_world_size") == hidden_world.AUTO
    if hidden_auto:
        options["hidden_world_size"] = None
    cfg = Config(world_size=world_size, device=device, **options)
    prob = _resolve(problem, cfg)
    if hidden_auto:  # drawn here, from the OS: never from the seed, which the request (and so a candidate) may know
        cfg.hidden_world_size = hidden_world.draw(prob, cfg.world_size, cfg.device, cfg.shared_device)
    source, digest = _read_candidate(candidate)
    if source is not None:
        candidate = os.path.abspath(candidate)  # ranks run in their own scratch directories
    base = _skeleton(prob, candidate, digest, cfg)
    started = time.monotonic()
    pre = _static_checks(source, cfg, os.path.basename(candidate))
    if pre:
        base.update(pre)
        shared_device.label(base, cfg.shared_device)
        base["wall_s"] = round(time.monotonic() - started, 3)
        return base
    seeds = _seeds(cfg)
    result: dict = {}
    attempt = 0
    while True:
        attempt += 1
        # A sandbox that cannot start is an infra_error like any other (retried, never scored): the judge never
        # switches it off to get a verdict.
        result = _run_once(prob, candidate, cfg, seeds, base, pool if attempt == 1 else None)
        result["attempts"] = attempt
        if result["verdict"] != schema.INFRA_ERROR or result.get("_final"):
            break
        # A hidden check that could not be judged is run again at least once (it fails closed, below).
        if attempt >= max(cfg.max_attempts, 2 if result.get("_unjudged") else 1):
            break
    result.pop("_final", None)
    unjudged = result.pop("_unjudged", None)
    if unjudged and result["verdict"] == schema.INFRA_ERROR:
        result.update(
            verdict=schema.UNVERIFIED,
            timing=None,
            flags=[],
            message=f"{unjudged} could not be judged in {attempt} attempts, so correctness is unverified: "
            f"{result.get('message', '')}",
        )
    # A cross-check flag in the first pair is weighed with the other pairs' (timing/pairs.py, triage); any other flag is
    # final. One pair (the default) whose cross-check was suspect is timed once more in fresh processes: honest
    # candidates sometimes exceed the allowance (docs/calibration.md), and a flag keeps a result off the rankings.
    flags = set(result.get("flags") or [])
    if (
        result["verdict"] == schema.CORRECT
        and result.get("timing")
        and not flags - {schema.FLAG_TIMING_CROSSCHECK}
        and (cfg.pairs > 1 or schema.FLAG_TIMING_CROSSCHECK in flags)
    ):
        _more_pairs(prob, candidate, cfg, base, result, pool, count=max(cfg.pairs, 2))
    if cfg.hidden_world_size and result["verdict"] == schema.CORRECT:
        _hidden_world(prob, candidate, cfg, base, result)
    _flag_unsandboxed(result)
    shared_device.label(result, cfg.shared_device)  # every result of a shared world says so, and never ranks
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
    """The evaluation's one decision of "faster" and "ranked" (evaluator/contract/verdict.py), made last, with every
    flag the result carries: a flagged result is shown as such and never ranks, whatever its numbers say."""
    verdict.conclude(result, result.get("device"))


def _more_pairs(prob, candidate: str, cfg: Config, base: dict, result: dict, pool, count: int) -> None:
    """Time pairs 2..count, each in fresh groups with one trial of its own (correctness is checked in every pair), and
    combine the timings (evaluator/timing/pairs.py). A pair the platform fails is dropped and said so; any other failure
    in a pair is the verdict, as in the first one. With ``cfg.pairs`` = 1 this is the retiming of a suspect pair: the
    result is flagged only if the second pair is suspect too, and otherwise takes the second pair's timing."""
    # ``pairs`` stays K: every pair times its 1/K share (evaluator/judge/schedule.py).
    one = dataclasses.replace(
        cfg,
        trials=1,
        hidden_shape=False,
        hidden_world_size=None,
        profile_dir=None,
        timing_estimate_ms=result["timing"].get("estimate_ms"),
        timing_reference_estimate_ms=result["timing"].get("reference_estimate_ms"),
    )
    timed, dropped = [(1, result["timing"])], []
    flags = set(result.get("flags") or [])
    for k in range(2, count + 1):
        seeds = _seeds(dataclasses.replace(one, seed=None if cfg.seed is None else derive_seed(cfg.seed, "pair", k)))
        for attempt in (1, 2):  # a pair the platform failed is run once more before it is dropped
            outcome = _run_once(prob, candidate, one, seeds, dict(base), pool if attempt == 1 else None)
            result["_inside_s"] = result.get("_inside_s", 0.0) + outcome.get("_inside_s", 0.0)
            if outcome["verdict"] != schema.INFRA_ERROR:
                break
        if outcome["verdict"] == schema.INFRA_ERROR:
            dropped.append({"pair": k, "message": outcome.get("message", "")[:500]})
            continue
        result["trials"] = result.get("trials", []) + [dict(t, pair=k) for t in outcome.get("trials", [])]
        if outcome["verdict"] != schema.CORRECT:
            result.update(
                verdict=outcome["verdict"],
                timing=None,
                flags=[],
                message=f"in timing pair {k} of {count}: {outcome.get('message', '')}",
            )
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
        result["timing"] = pairs.combine_evidence(
            [t for _, t in combined], cfg.device, HOST_BOUND_NOISE_FLOOR, dropped, aside
        )
    else:  # one pair left: its own document, with the one-pair floor it was judged with
        result["timing"] = dict(combined[0][1], pairs={"count": 1, "dropped": dropped, "set_aside": aside})
    result["timing"]["pairs"]["probe"] = pooled


def _hidden_world(prob, candidate: str, cfg: Config, base: dict, result: dict) -> None:
    """Correctness only, at a world size the candidate was not launched with; a failure there is the verdict."""
    W = cfg.hidden_world_size
    assert W is not None  # evaluate() runs this check only for a request that asks for one
    record: dict = {"world_size": W}
    if W == cfg.world_size or W < 1 or not prob.allows_world_size(W):
        record.update(verdict="skipped", message=f"W={W} is not another world size allowed by {prob.stem}")
    elif cfg.device == "cuda" and not cfg.shared_device and torch.cuda.device_count() < W:
        record.update(verdict="skipped", message=f"W={W} needs {W} GPUs")
    else:
        hidden_cfg = dataclasses.replace(cfg, world_size=W, trials=1, timing=False, hidden_world_size=None)
        seeds = _seeds(dataclasses.replace(hidden_cfg, seed=None if cfg.seed is None else derive_seed(cfg.seed, W)))
        # Fail closed: a run that cannot be judged (infra_error) is run once more, and if it still cannot, the result
        # is unverified: the check never passes by not running.
        for attempt in (1, 2):
            outcome = _run_once(prob, candidate, hidden_cfg, seeds, dict(base, world_size=W))
            result["_inside_s"] = result.get("_inside_s", 0.0) + outcome.get("_inside_s", 0.0)
            record["attempts"] = attempt
            if outcome["verdict"] != schema.INFRA_ERROR:
                break
        record.update(verdict=outcome["verdict"], message=outcome.get("message", ""))
        if outcome["verdict"] == schema.INFRA_ERROR:
            result.update(
                verdict=schema.UNVERIFIED,
                timing=None,
                flags=[],
                message=f"the hidden world-size check at W={W} could not be judged twice, so correctness "
                f"is unverified: {outcome.get('message', '')}",
            )
        elif outcome["verdict"] != schema.CORRECT:
            result.update(
                verdict=outcome["verdict"],
                timing=None,
                flags=[],
                message=f"at the hidden world size W={W}: {outcome.get('message', '')}",
            )
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
    if cfg.device == "cuda" and cfg.shared_device and torch.cuda.device_count() < 1:
        raise BadRequest("a shared-device world needs one GPU; this host has none")
    if cfg.device == "cuda" and not cfg.shared_device and torch.cuda.device_count() < cfg.world_size:
        raise BadRequest(
            f"world size {cfg.world_size} needs {cfg.world_size} GPUs; "
            f"this host has {torch.cuda.device_count()} (--shared-device runs every rank on one)"
        )
    if cfg.trials < 1:
        raise BadRequest("at least one trial is needed")
    if not 1 <= cfg.pairs <= schema.MAX_PAIRS:
        raise BadRequest(f"pairs must be between 1 and {schema.MAX_PAIRS}, not {cfg.pairs}")
    if cfg.seeds is not None and (
        len(cfg.seeds) < cfg.trials + 1
        or any(not isinstance(s, int) or not PUBLIC_SEED_BIT <= s < 2 * PUBLIC_SEED_BIT for s in cfg.seeds)
    ):
        raise BadRequest(f"explicit seeds must be at least trials + 1 = {cfg.trials + 1} public seeds (bit 62 set)")
    return prob


def _read_candidate(candidate: str) -> tuple[str | None, str]:
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
        "schema": schema.SCHEMA_VERSION,
        "problem": prob.stem,
        "problem_id": prob.id,
        "candidate": candidate,
        "candidate_sha256": digest,
        "world_size": cfg.world_size,
        "device": cfg.device,
        "shape": {"M": cfg.M, "N": cfg.N, "dtype": cfg.dtype, "reduced": cfg.reduced},
        "verdict": None,
        "message": "",
        "flags": [],
        "trials": [],
        "timing": None,
        "environment": _devices(),
        "logs": [],
        "attempts": 0,
    }


def _static_checks(source: str | None, cfg: Config, filename: str = "") -> dict | None:
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
        return list(cfg.seeds[: cfg.trials]) + [cfg.seeds[-1]]
    rng = random.Random(cfg.seed) if cfg.seed is not None else random.SystemRandom()
    return [rng.getrandbits(62) for _ in range(cfg.trials + 1)]  # the last one re-checks after timing
