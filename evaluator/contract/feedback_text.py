"""The feedback as text, shared by the site's run page (leaderboard/feedback/report.py) and ``pkb feedback``
(pkb_client/feedback.py): pure functions over the feedback document the site builds; the peak rates its speed of
light is measured against are evaluator/contract/hardware.py's. Part of the judge's torch-free contract
(evaluator/contract/schema.py re-exports it): standard library only, installed with the client alone
(client/pyproject.toml)."""

from __future__ import annotations

from typing import Any

from evaluator.contract.hardware import H200_CEILINGS


def ceilings_text(ceilings: dict[str, Any] = H200_CEILINGS) -> str:
    """``H200: NVLink 450 GB/s per direction, HBM 4.3 TB/s, 790 TFLOP/s dense bf16``."""
    return (
        f"{ceilings['name']}: NVLink {ceilings['link_bytes_per_s'] / 1e9:g} GB/s per direction, "
        f"HBM {ceilings['hbm_bytes_per_s'] / 1e12:g} TB/s, {ceilings['flops_per_s'] / 1e12:g} TFLOP/s dense bf16"
    )


def withheld_line(timing: dict[str, Any]) -> str:
    """Why an interval above 1.0 is not called faster because the reference's own timing blocks timed its host
    (evaluator/timing/rules.py, ``reference_blocks_spun_short``), or nothing."""
    blocks, short_pairs = timing.get("reference_blocks_spun_short"), timing.get("reference_spun_short_pairs")
    if not (blocks or short_pairs):
        return ""
    where = f"pairs {short_pairs}" if short_pairs else f"blocks {blocks}"
    return (
        f"not called faster: in {where} most of the reference's timed calls began before its host had queued them, "
        "so those blocks timed the reference's launches, not its kernels"
    )


def text(feedback: dict[str, Any]) -> str:
    """The feedback as the terminal shows it (``pkb feedback``)."""
    lines = [f"verdict: {str(feedback.get('verdict')).upper()}  {first_line(feedback.get('message', ''))}"]
    shape = feedback.get("shape") or {}
    # A run that ended before judging (refused, failed to start) lacks some of these: what is unknown is left out,
    # never printed as "None".
    where = [
        f"problem {feedback['problem']}" if feedback.get("problem") is not None else "",
        f"W={feedback['world_size']}" if feedback.get("world_size") is not None else "",
        str(feedback.get("device") or ""),
        " ".join(f"{k}={shape[k]}" for k in ("M", "N") if shape.get(k) is not None),
        str(shape.get("dtype") or ""),
        f"public seeds {', '.join(str(s) for s in feedback['seeds'])}" if feedback.get("seeds") else "",
    ]
    if any(where):
        lines.append("  ".join(part for part in where if part))
    miss = feedback.get("mismatch")
    if miss:
        lines.append(
            f"mismatch in trial {miss.get('trial')} (seed {miss.get('seed')}): ranks {miss.get('failing_ranks')} wrong"
        )
        for r in miss.get("ranks") or []:
            if r.get("ok"):
                continue
            lines.append(
                f"  rank {r['rank']}: {r.get('where') or 'output'}: max abs err {r.get('max_abs_error')}, "
                f"max rel err {r.get('max_rel_error')}, first at {r.get('first_mismatch_index')}: "
                f"{r.get('message')}"
            )
    log = feedback.get("compile_log") or {}
    if feedback.get("verdict") not in ("correct", "incorrect") and log.get("message"):
        lines.append("log:\n  " + "\n  ".join(str(log["message"]).strip().splitlines()[-20:]))
        for r in log.get("ranks") or []:
            tail = [x for x in (r.get("stderr") or "").strip().splitlines() if x][-6:]
            if tail:
                lines.append(f"  rank {r.get('rank')} stderr:\n    " + "\n    ".join(tail))
    timing = feedback.get("timing")
    if timing:
        lo, hi = timing.get("speedup_ci") or (None, None)
        lines.append(
            f"timing ({timing.get('method')}, {timing.get('samples')} samples, "
            f"{'ranked' if timing.get('ranked') else 'unranked'}): reference {timing.get('reference_ms')} ms, "
            f"candidate {timing.get('candidate_ms')} ms, speedup {timing.get('speedup')}x "
            f"[{lo}, {hi}] -> {'FASTER' if timing.get('faster') else 'not faster'}"
        )
        if timing.get("faster_withheld"):
            lines.append(timing["faster_withheld"])
        if timing.get("crosscheck_suspect") or "timing_crosscheck" in (feedback.get("flags") or []):
            check = timing.get("crosscheck") or {}
            lines.append(crosscheck_line(check, check.get("probe_pooled")))
    light = feedback.get("speed_of_light") or {}
    efficiency = light.get("efficiency")
    if isinstance(efficiency, (int, float)):
        lines.append(
            f"speed of light: {efficiency:.1%} of the floor {light.get('floor_ms')} ms ({light.get('ceilings')})"
        )
    else:
        lines.append(f"speed of light: n/a ({light.get('reason')})")
    if feedback.get("flags"):
        lines.append(f"flags: {', '.join(feedback['flags'])}")
    meter = feedback.get("metering") or {}
    # W x wall in the profile's unit: GPU-seconds where the ranks hold GPUs, rank-seconds on a CPU profile.
    if meter.get("wall_s") is None:
        lines.append("metered: nothing (the run did not reach the judge)")
    elif feedback.get("device") == "cuda":
        lines.append(f"metered: wall {meter.get('wall_s')} s, GPU-seconds {meter.get('gpu_seconds')}")
    else:
        wall, world = meter.get("wall_s"), feedback.get("world_size")
        ranks = round(wall * world, 3) if isinstance(wall, (int, float)) and isinstance(world, int) else None
        lines.append(f"metered: wall {wall} s, rank-seconds {ranks} (W x wall on a CPU profile)")
    return "\n".join(lines)


def crosscheck_line(check: dict[str, Any], pooled: dict[str, Any] | None = None) -> str:
    """Why the judge flagged a timing `timing_crosscheck`, in one line (docs/threat-model.md, 4 and 4b): the probe
    blocks at zero spin (one pair's, or the mean over K pairs), or time outside the timed window."""
    probe = check.get("probe") or {}
    why = "(work beside the spin, or launches much slower than the GPU work)"
    if pooled and pooled.get("suspect"):
        return (
            f"timing cross-check: over {pooled.get('pairs')} pairs, with no spin the judge's clock saw a mean "
            f"{pooled.get('mean_excess_ms')} ms a call more than the events claimed, beyond the reference's and "
            f"the {pooled.get('allowance_ms')} ms allowed {why}"
        )
    if probe.get("suspect"):
        return (
            f"timing cross-check: with no spin the judge's clock saw {probe.get('excess_ms')} ms a call more than "
            f"the events claimed, beyond the reference's and the {probe.get('allowance_ms')} ms allowed {why}"
        )
    return (
        f"timing cross-check: {check.get('unexplained_ms')} ms a call outside the timed window, beyond the "
        f"reference's and the {check.get('allowance_ms')} ms allowed"
    )


def first_line(message: str) -> str:
    return (message or "").strip().splitlines()[0] if (message or "").strip() else ""
