"""The timing blocks of one pair, judge side (``Schedule``): how many calls a block has, the spin both sides share,
which side goes first, the probe blocks, the judge's wall clock around each block and the outputs kept from timed
calls. What a rank does inside one block: evaluator/rank/timed.py; the rules that read the blocks:
evaluator/timing/rules.py."""

from __future__ import annotations

import os
import statistics
import time

from evaluator.contract import schema
from evaluator.judge.replies import _host_share, _samples, _share, _spin_wanted, _Stop
from evaluator.rank import outputs
from evaluator.rank.timed import timing_set_seed
from evaluator.timing.calibration import CANDIDATE_SPIN_SHARE, MAX_ITERS, PROBE_CALLS_FACTOR
from evaluator.timing.rules import _add_probe, _could_be_faster, pair_evidence


class Schedule:
    """One pair's timing: ``cfg.blocks`` spun blocks, reference and candidate in turn, then (where the candidate could
    be faster) ``cfg.probe_blocks`` blocks with no spin. ``estimate_ms``: the slower side's call in the trials (how
    many calls fit a block); ``reference_estimate_ms``: the reference's alone (where the spin starts: trusted)."""

    def __init__(self, pair, seeds: list[int], estimate_ms: float, reference_estimate_ms: float | None = None):
        cfg = self.cfg = pair.cfg
        self.pair, self.estimate_ms = pair, estimate_ms
        # With K pairs each pair times 1/K of one pair's calls: the pairs' offsets, not the calls within a pair, are
        # what limits precision (evaluator/timing/pairs.py), and K pairs then cost about one pair's timing, plus
        # start-ups.
        per_block = cfg.budget_ms() / cfg.blocks / cfg.pairs
        least = 3 if cfg.device == "cpu" else 10
        fits = per_block / max(estimate_ms + pair.build_ms, 1e-3)
        self.iters = int(min(max(least, MAX_ITERS // cfg.pairs), max(least, fits)))
        self.verify = not pair.cand.trusted  # an A/A self-check (reference as the candidate) needs no kept outputs
        # A fresh seed per block, unknown to the candidate until the block starts: nothing can be computed ahead, in
        # trials or in start-up.
        self.block_seeds = [pair._secret_seed(seeds, "timing-block", b) for b in range(cfg.blocks + cfg.probe_blocks)]
        # Spin long enough for the host to queue a call ahead of the start event (evaluator/rank/timed.py). In block
        # 0 each rank lengthens it to what its own host needs; from block 1 on both sides spin exactly the same, so
        # the spin cancels in the cross-check of wall clocks: the most the reference's ranks have wanted, or what the
        # candidate's wanted (a candidate whose launches are slower should still be timed on the GPU, not on its
        # host) up to CANDIDATE_SPIN_SHARE times that. The cap: the GPU is idle but for one spinning thread while the
        # host queues the call, and work a candidate starts on another stream in that time is seen by neither the
        # events nor the wall clock (docs/threat-model.md), so the candidate must not lengthen it at will.
        # From the reference's call time, not the slower side's: a candidate's trial replies could otherwise set it.
        self.basis_ms = estimate_ms if reference_estimate_ms is None else reference_estimate_ms
        self.first_spin_us = min(2000.0, max(20.0, self.basis_ms * 1e3)) if cfg.device == "cuda" else 0.0
        self.wanted = {"ref": 0.0, "cand": 0.0}
        self.spins: list[float] = []  # each spun block's spin, us
        # What the spun blocks measured, per side: samples per block, the judge's wall per call, shares of host-paced
        # and (a diagnostic) spun-short calls.
        self.blocks: dict = {"ref": [], "cand": []}
        self.walls: dict = {"ref": [], "cand": []}
        self.host_bound: dict = {"ref": [], "cand": []}
        self.spin_short: dict = {"ref": [], "cand": []}
        self.probe: dict = {"ref": [], "cand": [], "walls": {"ref": [], "cand": []}}  # the probe blocks' own
        self.kept: list[dict] = []  # the candidate's kept timed outputs, checked after the timed loop
        self.sets = 0

    def run(self) -> dict:
        """Time every block and return the pair's timing document (with ``_kept`` and ``_flags`` for the judge): its
        evidence only; "faster" and "ranked" are decided when the evaluation ends (evaluator/contract/verdict.py)."""
        cfg, iters = self.cfg, self.iters
        for b in range(cfg.blocks):
            trusted = max(self.first_spin_us, self.wanted["ref"])
            spin = max(trusted, min(self.wanted["cand"], CANDIDATE_SPIN_SHARE * trusted))
            self.spins.append(spin)
            self.block(b, iters, max(3, iters // 5) if b == 0 else 1, spin, exact=b > 0)
        # Probe blocks: no spin at all, so nothing a candidate queues can run unseen beside it, and the judge's own
        # clock then bounds what each call really costs (docs/threat-model.md, "Work beside the spin"). Their
        # samples are host-paced and stay out of the speedup; _probe_check compares their walls with the claims of
        # the spun blocks (PROBE_CALLS_FACTOR).
        estimate_ms = self.estimate_ms
        probe_iters = int(
            iters * min(PROBE_CALLS_FACTOR, max(1.0, (self.spins[-1] / 1e3 + estimate_ms) / (estimate_ms + 0.1)))
        )
        # Each block's spin per call of the blocks the cross-check reads (not block 0): one warm-up, no spin.
        spins_ms = [x / 1e3 * iters / (iters + 1) for x in self.spins]
        doc = pair_evidence(
            self.blocks["ref"],
            self.blocks["cand"],
            self.walls,
            cfg,
            self.pair.prob,
            self.pair.environment,
            calls=iters + 1,
            host_bound={side: statistics.median(v) for side, v in self.host_bound.items()},
            spin_ms=statistics.median(spins_ms[1:] or spins_ms),
            spins_ms=spins_ms,
            reference_spin_short=self.spin_short["ref"],
        )
        # The probe blocks guard "faster" (they cost a noticeable share of a judgement): a pair whose spun blocks
        # cannot make the candidate faster skips them, unless a calibration run asks for them always. They do not
        # change the speedup, so the document above only takes their check (_add_probe).
        probing = cfg.probe_blocks > 0 and (cfg.probe_always or _could_be_faster(doc, cfg))
        for p in range(cfg.probe_blocks if probing else 0):
            self.block(cfg.blocks + p, probe_iters, 1, 0.0, exact=True, is_probe=True)
        if probing:
            self.probe["calls"] = probe_iters + 1
            _add_probe(doc, self.blocks["ref"], self.blocks["cand"], self.probe, cfg)
        elif cfg.probe_blocks:
            doc["probe_skipped"] = (
                "the spun blocks cannot make this candidate faster (speedup "
                f"{doc['speedup']}, interval {doc['speedup_ci']}): nothing for the probe to guard"
            )
        doc.update(
            distinct_input_sets_per_block=self.sets,
            calls_per_block=iters + 1,
            _kept=self.kept,
            estimate_ms=round(estimate_ms, 6),
            reference_estimate_ms=round(self.basis_ms, 6),
            spin_us_per_block=[round(x, 1) for x in self.spins],
            spin_short_per_block={"reference": self.spin_short["ref"], "candidate": self.spin_short["cand"]},
        )
        return doc

    def block(self, b: int, n: int, warmup: int, spin: float, exact: bool, is_probe: bool = False) -> None:
        """Timing block ``b`` on both sides: ``warmup`` + ``n`` calls each, ``spin`` us ahead of each timed call."""
        pair, cfg = self.pair, self.cfg
        cmd = {
            "cmd": "time",
            "trial": 0,
            "seed": self.block_seeds[b],
            "iters": n,
            "warmup": warmup,
            "spin_us": spin,
            "spin_exact": exact,
            "replace_memory": cfg.replace_memory,
        }
        if self.verify:  # both sides keep one timed output (same harness cost); only the candidate's is checked
            cmd["tag"] = f"b{b}"
        timeout = pair.timeout + (n + warmup) * (5 * self.estimate_ms + 2 * pair.build_ms) / 1e3
        # Alternate which side goes first so neither always follows the other.
        order = (("ref", pair._ref_command), ("cand", pair._cand_command))
        for side, run in order if b % 2 == 0 else order[::-1]:
            replies = run(cmd, timeout)
            wall_ms = pair.last_wall_ms
            # The kept output leaves the rank in a command of its own, off the wall clock just read: its write
            # varies with its size and the page cache, and with 12 calls a block (8 pairs) 2 ms of that is enough
            # to read as a candidate's unexplained time (the cross-check). The reference's copy is dropped: only
            # the candidate's is checked. Sent without verification too: the rank hands a large cache back there.
            run({"cmd": "kept", "tag": cmd["tag"] if self.verify and side == "cand" else None}, pair.timeout)
            samples = _samples(replies, n, side)
            self.wanted[side] = max(self.wanted[side], _spin_wanted(replies))
            if is_probe:  # host-paced by design: no evidence of a host-bound call, and not in the speedup
                self.probe[side].append(samples)
                self.probe["walls"][side].append(wall_ms / (n + warmup))
            else:
                self.host_bound[side].append(_host_share(replies, side))
                self.spin_short[side].append(max(_share(x.get("spin_short")) for x in replies))
                self.blocks[side].append(samples)
                self.walls[side].append(wall_ms / (n + warmup))
            pair.inside_s += (sum(samples) + warmup * statistics.median(samples)) / 1e3
            if side == "cand":
                if self.verify:
                    self.kept.extend(self.collect_kept(cmd, replies, b))
                # Shown only (distinct_input_sets_per_block): a rank's value that is not a count is ignored, so
                # that a forged one cannot end the run as a platform failure.
                self.sets = max(
                    [self.sets] + [x["sets"] for x in replies if type(x.get("sets")) is int and x["sets"] >= 0]
                )

    def collect_kept(self, cmd: dict, replies: list[dict], block: int) -> list[dict]:
        """Take the outputs each rank kept in this block out of the candidate's reach right away (a copy in the
        reference's directory, made with the candidate stopped), to be checked after the timed loop."""
        pair = self.pair
        out = []
        began = time.monotonic()
        pair.cand.pause()  # once for all ranks' files: no write can land while they are copied
        try:
            for r, reply in enumerate(replies):
                call = reply.get("kept_call")
                if not isinstance(call, int) or not cmd["warmup"] <= call < cmd["warmup"] + cmd["iters"]:
                    raise _Stop(schema.RUNTIME_ERROR, f"rank {r} reported no valid kept call for timing block {block}")
                name = f"{cmd['tag']}_r{r}.pt"
                try:
                    outputs.take(
                        os.path.join(pair.cand.out_dir, name),
                        os.path.join(pair.ref.out_dir, f"kept_{name}"),
                        max_bytes=outputs.size_limit(pair.output_bytes),
                    )
                except Exception as exc:  # whatever makes the candidate's output unreadable is its error
                    raise _Stop(
                        schema.INCORRECT,
                        f"rank {r}: the output of timed call {call} of block {block} is unreadable: {exc}",
                    ) from exc
                out.append(
                    {
                        "rank": r,
                        "block": block,
                        "call": call,
                        "file": f"kept_{name}",
                        "seed": timing_set_seed(cmd["seed"], call),
                    }
                )  # the judge's own derivation, not the reply's
        finally:
            pair.cand.resume()
            pair.spent["take_kept"] += time.monotonic() - began
        return out
