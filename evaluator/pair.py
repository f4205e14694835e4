"""One pair of process groups, reference and candidate, and what the judge does with them: trials, the timed blocks,
the probe blocks and the re-check (``Pair``)."""
from __future__ import annotations

import collections
import math
import os
import random
import statistics
import time
from typing import Optional

from evaluator import outputs, schema
from evaluator.calibration import CANDIDATE_SPIN_SHARE, MAX_ITERS, PROBE_CALLS_FACTOR
from evaluator.config import Config
from evaluator.group import GroupFailure, RankGroup, close_all
from evaluator.rank_worker import timing_set_seed
from evaluator.replies import _Stop, _call_ms, _host_share, _samples, _share, _spin_wanted
from evaluator.timing import _add_probe, _could_be_faster, _timing_document
from problems.base import derive_seed


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


def _first_mismatch(record: dict) -> str:
    for entry in record["ranks"]:
        if not entry["ok"]:
            where = entry.get("where") or "output"
            return f"rank {entry['rank']}, {where}: {entry.get('message')}"
    return "mismatch"
