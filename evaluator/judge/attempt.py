"""One attempt at judging (evaluator/judge/evaluation.py decides how many): the reference's and the candidate's
groups started, or taken warm from the pool and given the job, judged as a Pair (trials, timing, the re-check),
closed and their scratch removed, with where the wall time went; whose fault an exception that escaped is
(``attribute``: docs/threat-model.md, attribution), and a reference that failed beside the candidate run again alone
(``_blame``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from evaluator.contract import schema
from evaluator.judge.config import Config
from evaluator.judge.pair import Pair
from evaluator.process import removal, sandbox, warm
from evaluator.process.group import RankGroup, close_all
from evaluator.process.protocol import CandidateFault


def _devices() -> dict:
    """The GPUs this judge's ranks were given (a worker pinned to a device set passes it; None: not narrowed)."""
    return {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


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
            common = cfg.group_shape(str(prob.id))
            ref = RankGroup("ref", candidate="reference", workdir=os.path.join(workdir, "ref"), trusted=True, **common)
            cand = RankGroup(
                "cand",
                candidate=candidate,
                workdir=os.path.join(workdir, "cand"),
                trusted=candidate == "reference" or candidate.startswith("null:"),
                isolate=cfg.sandbox,
                required=cfg.sandbox_required,
                **common,
            )
        pair = Pair(prob, ref, cand, cfg, bystanders=pool)
        outcome = pair.start()
        if outcome is None and spare:
            outcome = pair.load(candidate, shape=dict(M=cfg.M, N=cfg.N, dtype=cfg.dtype, reduced=cfg.reduced))
        phases["start"] = time.monotonic() - began
        if outcome is None:
            outcome = pair.judge(seeds)
            if cfg.profile_dir and outcome.get("verdict") in (schema.CORRECT, schema.INCORRECT):
                from evaluator.rank import profiling

                outcome["profile"] = profiling.record(pair, seeds[0], cfg.profile_dir)
        result.update(outcome)
        result["environment"] = dict(pair.environment, warm_start=spare is not None, **_devices())
        result["_inside_s"] = pair.inside_s
        phases["judge"] = time.monotonic() - began - phases["start"]
    except sandbox.SandboxUnavailable as exc:  # before any candidate code ran; retrying would not help
        result.update(verdict=schema.INFRA_ERROR, message=f"sandbox unavailable: {exc}", _final=True)
    except Exception as exc:  # noqa: BLE001 - whose fault it is: attribute
        result.update(attribute(exc, cand))
    finally:
        closing = time.monotonic()
        try:
            close_all([cand, ref])
        except Exception as exc:  # noqa: BLE001 - a group that could not be closed: whose fault, as above
            blame = attribute(exc, cand, "while closing: ")
            if result.get("verdict") in schema.CANDIDATE_FAULTS:  # already the candidate's: the verdict stands
                result["message"] = f"{result.get('message', '')}\n({blame['message']})"
            else:
                result.update(blame, timing=None, flags=[])
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
        if workdir:  # the candidate's tree, whatever its shape (an unsandboxed run has no scratch mount)
            removal.remove_tree(workdir)
    failed_command = result.pop("_reference_failed", None)
    if failed_command is not None and result.get("verdict") == schema.INFRA_ERROR:
        _blame(prob, cfg, failed_command, result)
    return result


def attribute(exc: BaseException, cand: RankGroup | None, when: str = "") -> dict:
    """The one rule for an exception that escaped judging (docs/threat-model.md, attribution): what went wrong while
    the judge read, waited on, froze, killed or cleaned up after the candidate's group, once the candidate's code may
    have run, is the candidate's verdict (a CandidateFault, raised by RankGroup.acting and the box); anything else is
    the platform's infra_error (its own processes, the reference group, the host, a bug in the judge)."""
    if isinstance(exc, CandidateFault) and cand is not None and cand.candidate_ran():
        verdict = exc.verdict if exc.verdict in schema.CANDIDATE_FAULTS else schema.RUNTIME_ERROR
        return {"verdict": verdict, "message": when + exc.message, "timing": None, "flags": []}
    return {"verdict": schema.INFRA_ERROR, "message": f"{when}judge failure: {type(exc).__name__}: {exc}"}


def _blame(prob, cfg: Config, command: dict, result: dict) -> None:
    """The reference failed while the candidate ran beside it. Run the same command on a fresh reference group with
    no candidate: if it passes there, the candidate broke it (killed it, took the GPU's memory, ...), which is the
    candidate's fault, not the platform's (an infra_error would be retried and never count against it)."""
    workdir = tempfile.mkdtemp(prefix="pkb-blame-")
    group = None
    try:
        group = RankGroup(
            "ref",
            cfg.world_size,
            cfg.device,
            str(prob.id),
            "reference",
            os.path.join(workdir, "ref"),
            cfg.M,
            cfg.N,
            cfg.dtype,
            cfg.reduced,
            True,
        )
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
    result.update(
        verdict=schema.RUNTIME_ERROR,
        timing=None,
        flags=[],
        message="the candidate interfered with the reference ranks, which failed only while it ran "
        f"(and pass alone): {result.get('message', '')}",
    )
