"""``pkb selfcheck``: every reference judged against itself (A/A) through the real judge, then the null answers
(zeros, inputs returned unchanged, no communication), each of which must be rejected.

References are trusted, so one launch of a reference group and a "candidate" group serves all problems of a world
size (the groups switch problem with the ``load`` command); real candidates always get fresh processes per problem.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time

import problems
from evaluator.contract import schema, verdict
from evaluator.judge.config import Config
from evaluator.judge.evaluation import _seeds
from evaluator.judge.pair import Pair
from evaluator.process.group import RankGroup, close_all

NULLS = ("zeros", "inputs", "nocomm")


def run(
    ids: list[int],
    world_size: int,
    device: str = "cpu",
    M: int = 1024,
    N: int = 1024,
    reduced: bool = False,
    trials: int = 5,
    nulls: bool = True,
    seed: int | None = None,
    on_row=None,
    aa_repeats: int = 1,
    timing_budget_ms: float | None = None,
    timing: bool = True,
    shared_device: bool = False,
) -> dict:
    """``aa_repeats`` > 1 judges each reference against itself that many times (fresh seeds each, the same two
    groups of processes), for A/A precision sweeps (benchmarks/judge_gpu.py selfcheck-aa). ``timing_budget_ms``: each
    side's timing budget (the judge's default when None); a check of the references' correctness needs little.
    ``timing=False``: correctness and nulls only."""
    cfg = Config(
        world_size=world_size,
        device=device,
        trials=trials,
        seed=seed,
        M=M,
        N=N,
        reduced=reduced,
        timing_budget_ms=timing_budget_ms,
        timing=timing,
        shared_device=shared_device,
    )
    rows = []
    session = None
    try:
        for pid in ids:
            try:
                prob = problems.get(pid)
            except problems.UnknownProblem as exc:
                rows.append({"id": pid, "verdict": "missing", "ok": False, "message": str(exc)})
                continue
            if not prob.allows_world_size(world_size):
                rows.append(
                    {
                        "id": pid,
                        "stem": prob.stem,
                        "verdict": "skipped",
                        "ok": True,
                        "message": f"W={world_size} not allowed ({prob.world_size_rule})",
                    }
                )
                continue
            started = time.monotonic()
            if session is None:
                session = _Session(prob, cfg)
            row = session.check(prob, nulls and world_size >= 1, aa_repeats)
            row["seconds"] = round(time.monotonic() - started, 2)
            rows.append(row)
            if on_row:
                on_row(row)
            if row["verdict"] not in (schema.CORRECT, schema.INCORRECT):
                session.close()
                session = None  # a failed reference may have left the groups unusable: start afresh
    finally:
        if session is not None:
            session.close()
    return {
        "world_size": world_size,
        "device": device,
        "M": M,
        "N": N,
        "reduced": reduced,
        "rows": rows,
        "ok": all(row["ok"] for row in rows),
    }


class _Session:
    def __init__(self, prob, cfg: Config):
        self.cfg = cfg
        self._start(prob)

    def _start(self, prob) -> None:
        """Fresh groups for ``prob``, both holding the reference, in a new working directory."""
        cfg = self.cfg
        self.workdir = tempfile.mkdtemp(prefix="pkb-selfcheck-")
        common = cfg.group_shape(str(prob.id))
        where = os.path.join(self.workdir, "ref"), os.path.join(self.workdir, "cand")
        self.ref = RankGroup("ref", candidate="reference", workdir=where[0], trusted=True, **common)
        self.cand = RankGroup("cand", candidate="reference", workdir=where[1], trusted=True, **common)
        self.fresh = True
        self.holding = (prob.id, "reference")  # what the groups were launched with

    def _pair(self, prob, candidate: str):
        """A judged pair for (prob, candidate): fresh groups are started for the problem they were launched with,
        then switched with ``load`` whenever the problem or the candidate differs from what they hold."""
        pair = Pair(prob, self.ref, self.cand, self.cfg)
        if self.fresh:
            self.fresh = False
            failed = pair.start()
            if failed:
                return pair, failed
        if self.holding != (prob.id, candidate):
            failed = pair.load(candidate)
            if failed:
                return pair, failed
        self.holding = (prob.id, candidate)
        return pair, None

    def check(self, prob, with_nulls: bool, aa_repeats: int = 1) -> dict:
        seeds = _seeds(self.cfg)
        pair, failed = self._pair(prob, "reference")
        outcome = failed or self._judged(pair, seeds)
        repeats = [outcome]
        for rep in range(1, aa_repeats):
            if repeats[-1]["verdict"] != schema.CORRECT:
                break
            again = dataclasses.replace(self.cfg, seed=None if self.cfg.seed is None else self.cfg.seed + 7919 * rep)
            repeats.append(self._judged(pair, _seeds(again)))
        row = {
            "id": prob.id,
            "stem": prob.stem,
            "verdict": outcome["verdict"],
            "message": outcome.get("message", ""),
            "output_shapes": (outcome.get("trials") or [{}])[0].get("output_shapes"),
            "timing": outcome.get("timing"),
            "nulls": {},
        }
        # An A/A run must never be "faster". CPU timings are unranked (gloo on a shared host), so there a "faster" is
        # reported in the row but is not a failure of the reference.
        row["aa"] = [aa_summary(o) for o in repeats]
        aa_faster = any(a["faster"] for a in row["aa"]) and self.cfg.device == "cuda"
        row["ok"] = all(o["verdict"] == schema.CORRECT for o in repeats) and not aa_faster
        if len(repeats) > 1 and repeats[-1]["verdict"] != schema.CORRECT:
            row["verdict"], row["message"] = repeats[-1]["verdict"], f"A/A repeat: {repeats[-1].get('message', '')}"
        if with_nulls and row["verdict"] == schema.CORRECT:
            for kind in NULLS:
                if kind == "nocomm" and self.cfg.world_size == 1:
                    continue  # with one rank there is no communication to skip
                pair, failed = self._pair(prob, f"null:{kind}")
                null = failed or pair.judge(seeds[:3] + seeds[-1:], timing=False)
                row["nulls"][kind] = null["verdict"]
                if null["verdict"] == schema.CORRECT and kind == "inputs" and self.cfg.world_size == 1:
                    # With one rank many collectives are the identity: the input IS the right answer.
                    row["nulls"][kind] = "identity_at_W1"
                elif null["verdict"] == schema.CORRECT and prob.null_exemption(kind, self.cfg.world_size):
                    row["nulls"][kind] = "exempt"
                    row["message"] += (
                        f"; null '{kind}' passes by the spec's semantics: "
                        f"{prob.null_exemption(kind, self.cfg.world_size)}"
                    )
                elif null["verdict"] == schema.CORRECT:
                    row["ok"] = False
                    row["message"] += f"; null answer '{kind}' PASSED the check"
                if null["verdict"] not in (schema.CORRECT, schema.INCORRECT):
                    # A crashed null leaves the groups in an unknown state; rebuild them for what follows.
                    self.close()
                    self._start(prob)
        return row

    def _judged(self, pair, seeds: list[int]) -> dict:
        """An A/A judgement, ended as evaluate ends one: "faster" and "ranked" decided with its flags."""
        return verdict.conclude(pair.judge(seeds), self.cfg.device)

    def close(self):
        close_all([self.cand, self.ref])
        import shutil

        shutil.rmtree(self.workdir, ignore_errors=True)


def aa_summary(outcome: dict) -> dict:
    """What an A/A run (a reference judged against itself) says: its speedup and interval, whether the interval
    contains 1.0 and whether it was (falsely) called faster."""
    timing = outcome.get("timing") or {}
    ci = timing.get("speedup_ci") or [None, None]
    paired = timing.get("pairs") or {}
    return {
        "verdict": outcome["verdict"],
        "speedup": timing.get("speedup"),
        "ci": ci,
        "contains_1": bool(timing) and ci[0] <= 1.0 <= ci[1],
        "faster": bool(timing.get("faster")),
        "reference_ms": timing.get("reference_ms"),
        "bootstrap_ci": timing.get("bootstrap_ci"),
        "host_bound": timing.get("host_bound"),
        "host_bound_share": timing.get("host_bound_share"),
        "flags": outcome.get("flags") or [],
        "crosscheck": timing.get("crosscheck"),
        "pairs": paired.get("each"),
        "set_aside": paired.get("set_aside"),
        "dropped": paired.get("dropped"),
        "spin_us_per_block": timing.get("spin_us_per_block"),
        "spin_short_per_block": timing.get("spin_short_per_block"),
        "probe_pooled": paired.get("probe"),
        "faster_withheld": bool(timing.get("reference_blocks_spun_short") or timing.get("reference_spun_short_pairs")),
    }


def render(report: dict) -> str:
    lines = [
        f"selfcheck W={report['world_size']} {report['device']} M={report['M']} N={report['N']}"
        f"{' reduced' if report['reduced'] else ''}"
    ]
    lines.extend(render_row(row) for row in report["rows"])
    bad = sum(not r["ok"] for r in report["rows"])
    lines.append(f"{len(report['rows']) - bad} ok, {bad} bad")
    return "\n".join(lines)


def render_row(row: dict) -> str:
    timing = row.get("timing") or {}
    t = f"ref {timing['reference_ms']:.3f} ms A/A {timing['speedup']:.3f}x" if timing else ""
    nulls = " ".join(f"{k}={v}" for k, v in row.get("nulls", {}).items())
    return (
        f"{'ok ' if row['ok'] else 'BAD'} {row['id']:>3} {row.get('stem', ''):<46} {row['verdict']:<14} "
        f"{t:<32} {nulls}  {row.get('seconds', '')}s  shapes={row.get('output_shapes')}"
        + ("" if row["ok"] else f"  <- {row['message'][:300]}")
    )
