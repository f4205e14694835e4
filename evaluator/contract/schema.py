"""The judge's result JSON: verdict names and the shape of the document the site stores.

Example (abridged) of what ``pkb eval ... --json OUT`` writes::

    {
      "schema": 1,
      "problem": "13_gemm_allreduce", "problem_id": 13,
      "candidate": "path/or/reference", "candidate_sha256": "...",
      "world_size": 2, "device": "cpu", "shape": {"M": 1024, "N": 1024, "dtype": "bfloat16"},
      "verdict": "correct",                     # one of VERDICTS
      "message": "human-readable reason for the verdict",
      "flags": [],                              # e.g. ["timing_crosscheck", "faster_than_light"]; flagged never ranks
      "trials": [{"trial": 0, "seed": 123, "verdict": "correct",
                  "ranks": [{"rank": 0, "ok": true, "max_abs_error": 0.0, "max_rel_error": 0.0,
                             "where": null, "message": null, "first_mismatch_index": null}]}],
      "timing": {"reference_ms": 1.2, "candidate_ms": 1.0, "speedup": 1.2, "speedup_ci": [1.1, 1.3],
                 "faster": true, "samples": 120, "ranked": false, "method": "cuda_events|wall_clock",
                 "faster_at": {"1.0": true, "1.5": false, "2.0": false},  # fast_p's bars (contract/verdict.py)
                 "crosscheck": {"unexplained_ms", "allowance_ms", "noise_ms", "suspect", "blocks_ms", ...,
                                "probe": {"excess_ms", "allowance_ms", "suspect", ...}},  # probe: GPU, 4b
                 "reference_blocks_spun_short": [],   # blocks that timed the reference's host: "faster" withheld
                 "reference_spun_short_pairs": [],    # K pairs: the pairs that had such blocks (same consequence)
                 "probe_skipped": "why no probe blocks ran"} | null,   # null unless every trial was correct
      "environment": {"host": ..., "gpus": [...], "driver": ..., "torch": ..., "nccl": ..., "triton": ...,
                      "python": ..., "backend": "gloo|nccl"},
      "logs": [{"role": "candidate", "rank": 0, "stdout": "...", "stderr": "..."}],  # bounded tails
      "wall_s": 12.3, "judge_overhead_s": 3.4, "attempts": 1,
      "phases_s": {"start": 4.1, "judge": 7.9, "close": 0.2,   # the last attempt's launch, judging, teardown
                   "judge_parts": {"reference_trial": 1.2, "candidate_time": 2.1, "reference_check": 0.1,
                                   "read_outputs": 0.4, "compare": 0.3, "take_kept": 0.2, "other": 0.1, ...}}
                   # judging, by command and step: the reference ranks' checks of the candidate's files are split into
                   # reading them and comparing (the slowest rank's); take_kept: copying kept timed outputs away
    }
"""

from __future__ import annotations

import math

SCHEMA_VERSION = 1

CORRECT = "correct"
INCORRECT = "incorrect"
COMPILE_ERROR = "compile_error"
RUNTIME_ERROR = "runtime_error"
TIMEOUT = "timeout"
POLICY_VIOLATION = "policy_violation"
INFRA_ERROR = "infra_error"
# A hidden check (another world size, another shape) that could not be judged even when run again: the correctness
# the trials showed is not verified, so the result is neither correct nor ranked, and, being no platform failure of
# the run as a whole, not retried or refunded either (docs/threat-model.md, hidden checks fail closed).
UNVERIFIED = "unverified"

VERDICTS = (CORRECT, INCORRECT, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, POLICY_VIOLATION, INFRA_ERROR, UNVERIFIED)
# Verdicts that are the candidate's responsibility; infra_error never counts against it.
CANDIDATE_FAULTS = (INCORRECT, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, POLICY_VIOLATION)

# Flags that keep a result off the rankings even when it is correct (see docs/threat-model.md).
FLAG_TIMING_CROSSCHECK = "timing_crosscheck"
FLAG_FASTER_THAN_LIGHT = "faster_than_light"
FLAG_UNRANKED_DEVICE = "unranked_device"
# Correct within the problem's tolerance, but a floating output came in another dtype than the reference's
# (docs/dtype.md): a lower precision moves fewer bytes, so such a result is shown and never "faster".
FLAG_DTYPE_DIFFERS = "dtype_differs"
# The candidate ran without every sandbox layer (a development host): nothing it did can be trusted to rank.
FLAG_UNSANDBOXED = "unsandboxed"
# Every rank on one GPU (pkb eval --shared-device, evaluator/judge/shared_device.py): multi-rank correctness on CUDA,
# never timed, never ranked, never faster.
FLAG_SHARED_DEVICE = "shared_device"
FLAGS = (
    FLAG_TIMING_CROSSCHECK,
    FLAG_FASTER_THAN_LIGHT,
    FLAG_UNRANKED_DEVICE,
    FLAG_DTYPE_DIFFERS,
    FLAG_UNSANDBOXED,
    FLAG_SHARED_DEVICE,
)
# Flags that question only the timing: on an unranked (CPU) profile the correctness verdict stands beside them.
TIMING_FLAGS = (FLAG_TIMING_CROSSCHECK, FLAG_FASTER_THAN_LIGHT, FLAG_UNRANKED_DEVICE, FLAG_SHARED_DEVICE)

# Set in every published (public) trial seed, never in a seed the judge draws (getrandbits(62)): feedback runs'
# seeds and ranking seeds are disjoint by construction (leaderboard/feedback/seeds.py).
PUBLIC_SEED_BIT = 1 << 62

# Timing limits the site shows and enforces (evaluator/timing/pairs.py uses them; the site reads them from here).
# Standard deviation of log(speedup) of one pair for identical code, GPU-paced calls, measured by A/A runs on an H200
# (docs/calibration.md, PAIR_OFFSET_SD). One value serves both rules: judge.PROCESS_NOISE_FLOOR (one pair) is
# exp(PAIR_Z x this) - 1. On CPU (never ranked) no calibration exists: the empirical interval alone.
PAIR_OFFSET_SD = {"cuda": 0.030, "cpu": 0.0}
# One-sided z for the calibrated part: ~0.4% false "faster" per judged run if offsets are normal with that SD, i.e.
# about one in 255 A/A runs (87 problems x 3).
PAIR_Z = 2.65
# Host-paced timings (judge.HOST_BOUND_NOISE_FLOOR): the host's pace differs between processes far more than GPU work
# does (docs/calibration.md, HOST_PACED_FLOOR).
HOST_PACED_FLOOR = 0.50
# How far one pair's interval is widened for its pair's offset (judge.PROCESS_NOISE_FLOOR). CUDA: the one-sided bound
# from the calibration above (8.3%). CPU: wall-clock timing is host-paced by nature, so the host-paced floor
# (docs/calibration.md, ONE_PAIR_FLOOR).
ONE_PAIR_FLOOR = {"cuda": round(math.exp(PAIR_Z * PAIR_OFFSET_SD["cuda"]) - 1.0, 4), "cpu": HOST_PACED_FLOOR}
MAX_PAIRS = 16  # the most timing pairs: Config.pairs and HardwareProfile.timing_pairs

# The candidate sandbox's switch, PKB_SANDBOX, as both sides read it.


def sandbox_mode(value: str | None, default: str) -> str:
    """``PKB_SANDBOX`` read one way on both sides (the judge's evaluator/process/sandbox.py, the site's settings):
    ``required`` (also ``require``, ``strict``: fail closed), ``off`` (also ``0``, ``false``, ``no``: an operator's
    explicit choice, every result flagged), ``auto``; unset or empty: ``default`` (the judge's ``auto`` for ``pkb
    eval`` on one's own machine, the site's ``required``); any other word: ``auto``."""
    word = (value or "").strip().lower() or default
    if word in ("0", "off", "false", "no"):
        return "off"
    if word in ("required", "require", "strict"):
        return "required"
    return "auto"


# Which backends the judge can build: the same test for the judge's static checks and the site's uploads.
# The feedback as text (the site's run page and ``pkb feedback``): evaluator/contract/feedback_text.py; the peak rates
# behind it and the judge's speed-of-light floor: evaluator/contract/hardware.py.
from evaluator.contract import feedback_text, hardware  # noqa: E402,F401
from evaluator.contract.backends import SUPPORTED_BACKENDS, unsupported_backend  # noqa: E402,F401

# The request a worker sends the judge (``pkb eval``'s command line as a type): evaluator/contract/requests.py.
from evaluator.contract.requests import (  # noqa: E402,F401
    JUDGE,
    BadDeviceSet,
    JudgeRequest,
    PrebuildRequest,
    device_set,
    has_compile_call,
    serve_command,
)

# "Faster at p" (fast_p's bars) as the judge decided it, read from a timing record (older records: from their stored
# "faster" and interval): evaluator/contract/verdict.py, the one place that decides it; the site counts what it returns.
from evaluator.contract.verdict import BARS as SPEEDUP_BARS  # noqa: E402,F401
from evaluator.contract.verdict import bar_key, faster_at  # noqa: E402,F401  (read by leaderboard/scoring/services.py)
