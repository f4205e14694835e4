"""The result document (evaluator/contract/schema.py) as the lines ``pkb eval`` prints: the verdict, each trial with its
worst error, the hidden world size, the timing and its interval, the flags, the failing ranks' stderr, the wall time.
"""

from __future__ import annotations

from evaluator.contract import schema


def summary(result: dict) -> str:
    lines = [
        f"{result['problem']}  W={result['world_size']} {result['device']}  candidate={result['candidate']}",
        f"verdict: {result['verdict'].upper()}  {result.get('message', '')}",
    ]
    for trial in result.get("trials", []):
        worst = max(
            (r.get("max_abs_error") or 0 for r in trial["ranks"] if isinstance(r.get("max_abs_error"), (int, float))),
            default=0,
        )
        where = "".join(
            [
                f" at hidden shape M={trial['hidden_shape']['M']} N={trial['hidden_shape']['N']}"
                if trial.get("hidden_shape")
                else "",
                f" at W={trial['world_size']}" if trial.get("world_size") else "",
            ]
        )
        lines.append(
            f"  trial {trial['trial']} seed {trial['seed']}{where}: {trial['verdict']} (max abs err {worst:.3g})"
        )
    hidden_world = result.get("hidden_world_size")
    if hidden_world:
        lines.append(
            f"hidden world size W={hidden_world['world_size']}: {hidden_world['verdict']}"
            + (f" ({hidden_world['message']})" if hidden_world.get("message") else "")
        )
    timing = result.get("timing")
    if timing:
        lo, hi = timing["speedup_ci"]
        lines.append(
            f"timing ({timing['method']}, {timing['samples']} samples, "
            f"{'ranked' if timing['ranked'] else 'unranked'}): reference {timing['reference_ms']:.4f} ms, "
            f"candidate {timing['candidate_ms']:.4f} ms, speedup {timing['speedup']:.3f}x "
            f"[{lo:.3f}, {hi:.3f}] -> {'FASTER' if timing['faster'] else 'not faster'}"
        )
    if result.get("flags"):
        lines.append(f"flags: {', '.join(result['flags'])} (never ranked)")
    if result["verdict"] not in (schema.CORRECT, schema.INCORRECT):
        for log in result.get("logs", []):
            if log.get("stderr"):
                tail = "\n    ".join(log["stderr"].strip().splitlines()[-8:])
                lines.append(f"  {log['role']} rank {log['rank']} stderr:\n    {tail}")
    if "wall_s" in result:
        lines.append(f"wall {result['wall_s']:.2f} s, judge overhead {result.get('judge_overhead_s', 0):.2f} s")
    return "\n".join(lines)
