"""The structured feedback an agent gets back, built from the judge's document (pure functions, no torch, no DB).

    {"verdict", "message", "flags",
     "compile_log": {"message", "ranks": [{"rank", "exit_code", "stdout", "stderr"}]},   # the candidate's own ranks
     "mismatch": {"trial", "seed", "failing_ranks", "ranks": [{"rank", "ok", "where", "max_abs_error",
                  "max_rel_error", "first_mismatch_index", "message"}]} | null,
     "timing": {"reference_ms", "candidate_ms", "speedup", "speedup_ci", "faster", "ranked", "method", "samples",
                "blocks", "crosscheck_suspect",
                "crosscheck": {"unexplained_ms", "allowance_ms",
                               "probe": {"excess_ms", "allowance_ms", "suspect"} | null,
                               "probe_pooled": {"pairs", "mean_excess_ms", "allowance_ms", "suspect"} | null}} | null,
     "speed_of_light": {"efficiency": float | "n/a", "reason", "floor_ms", "link_ms", "hbm_ms", "compute_ms",
                        "bytes_per_rank", "flops_per_rank", "ceilings"},
     "shape", "world_size", "device", "seeds", "environment", "metering": {"wall_s", "gpu_seconds"}}

Speed of light: the judge's own floor (evaluator/timing/physics.py: the bytes each rank must move over NVLink at
450 GB/s and the FLOPs at 790 TFLOP/s bf16, on H200-class GPUs) over the measured candidate time; ``hbm_ms`` is the
same bytes at the HBM rate (4.3 TB/s), for reference. "n/a" on CPU profiles (no peak rates) and wherever the catalogue's
estimate does not hold (a shape other than the catalogue defaults M = N = 1024, bf16, W = 8 for problems without a
formula). Reference logs are never included.
"""

from __future__ import annotations

from evaluator.contract import schema
from evaluator.contract.schema import feedback_text, hardware

# The text renderers and the ceilings are the contract's (evaluator/contract/feedback_text.py), so the site's run page
# and ``pkb feedback`` agree.
text, withheld_line, crosscheck_line, first_line = (
    feedback_text.text,
    feedback_text.withheld_line,
    feedback_text.crosscheck_line,
    feedback_text.first_line,
)
HBM_BYTES_PER_S = hardware.H200_CEILINGS["hbm_bytes_per_s"]
CEILINGS_TEXT = feedback_text.ceilings_text()
LOG_FIELDS = ("rank", "exit_code", "stdout", "stderr")


def build(document: dict, wall_ms: int, gpu_ms: int, seeds: list[int]) -> dict:
    timing = document.get("timing") or None
    return {
        "verdict": document.get("verdict"),
        "message": document.get("message", ""),
        "flags": list(document.get("flags") or []),
        "compile_log": compile_log(document),
        "mismatch": mismatch(document),
        "timing": timing_summary(timing),
        "speed_of_light": speed_of_light(document),
        "problem": document.get("problem"),
        "world_size": document.get("world_size"),
        "device": document.get("device"),
        "shape": document.get("shape"),
        "seeds": list(seeds),
        "environment": {k: v for k, v in (document.get("environment") or {}).items() if k != "sandbox"},
        "metering": {"wall_s": wall_ms / 1000, "gpu_seconds": gpu_ms / 1000},
    }


def compile_log(document: dict) -> dict:
    ranks = [
        {k: log.get(k) for k in LOG_FIELDS}
        for log in document.get("logs") or []
        if isinstance(log, dict) and log.get("role") == "candidate"
    ]
    return {"message": document.get("message", "") if document.get("verdict") != schema.CORRECT else "", "ranks": ranks}


def mismatch(document: dict) -> dict | None:
    """Where the first wrong trial went wrong, rank by rank, and by how much."""
    for trial in document.get("trials") or []:
        if trial.get("verdict") == schema.CORRECT:
            continue
        ranks = [
            {
                k: r.get(k)
                for k in ("rank", "ok", "where", "max_abs_error", "max_rel_error", "first_mismatch_index", "message")
            }
            for r in trial.get("ranks") or []
        ]
        out = {
            "trial": trial.get("trial"),
            "seed": trial.get("seed"),
            "ranks": ranks,
            "failing_ranks": [r["rank"] for r in ranks if not r.get("ok")],
        }
        for key in ("after_timing", "hidden_shape", "world_size"):
            if key in trial:
                out[key] = trial[key]
        return out
    if document.get("verdict") == schema.INCORRECT:  # e.g. a timed call's kept output was wrong
        return {"trial": None, "seed": None, "ranks": [], "failing_ranks": [], "message": document.get("message")}
    return None


def timing_summary(timing: dict | None) -> dict | None:
    if not timing:
        return None
    keys = ("reference_ms", "candidate_ms", "speedup", "speedup_ci", "faster", "ranked", "method", "samples", "blocks")
    out = {k: timing.get(k) for k in keys}
    check = timing.get("crosscheck") or {}
    out["crosscheck_suspect"] = bool(check.get("suspect"))
    # Which of the judge's clocks disagreed with the reported times, and by how much (docs/threat-model.md, 4 and
    # 4b): an agent whose honest kernel is flagged needs to know whether its time outside the window or its cost at
    # zero spin (slow launches read like work hidden beside the spin) is what to reduce.
    probe = check.get("probe")
    out["crosscheck"] = {
        "unexplained_ms": check.get("unexplained_ms"),
        "allowance_ms": check.get("allowance_ms"),
        "probe": {k: probe.get(k) for k in ("excess_ms", "allowance_ms", "suspect")} if probe else None,
        "probe_pooled": (timing.get("pairs") or {}).get("probe"),
    }
    out["faster_withheld"] = withheld_line(timing) or None
    return out


def speed_of_light(document: dict) -> dict:
    timing = document.get("timing") or {}
    light = timing.get("speed_of_light") or {}
    out = {"efficiency": "n/a", "ceilings": CEILINGS_TEXT}
    if not timing:
        out["reason"] = "no timing (the candidate was not correct on every trial)"
        return out
    if document.get("device") != "cuda":
        out["reason"] = "CPU profile: no peak rates (CPU timings never rank)"
        return out
    if not light.get("applies"):
        out["reason"] = light.get("reason") or "no estimate for this problem and shape"
        return out
    candidate_ms = timing.get("candidate_ms") or 0
    moved = float(light.get("bytes_per_rank") or 0)
    out.update(
        reason="",
        floor_ms=light.get("floor_ms"),
        link_ms=light.get("link_ms"),
        compute_ms=light.get("compute_ms"),
        hbm_ms=round(moved / HBM_BYTES_PER_S * 1e3, 6),
        bytes_per_rank=light.get("bytes_per_rank"),
        flops_per_rank=light.get("flops_per_rank"),
    )
    if candidate_ms > 0 and light.get("floor_ms"):
        out["efficiency"] = round(float(light["floor_ms"]) / candidate_ms, 4)
    return out
