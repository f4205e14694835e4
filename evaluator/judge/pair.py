"""One pair of process groups, reference and candidate, and what the judge does with them (``Pair``): start-up,
trials and their checks, the timing blocks (evaluator/judge/schedule.py), the timed outputs' check and the re-check."""

from __future__ import annotations

import collections
import math
import random
import time
from typing import cast

from evaluator.contract import schema
from evaluator.judge.config import Config
from evaluator.judge.replies import _call_ms, _Stop
from evaluator.judge.schedule import Schedule
from evaluator.process.group import RankGroup, close_all
from evaluator.process.protocol import GroupFailure
from evaluator.rank.shared_device import LIMIT_KIND as SHARED_WORLD_LIMIT


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
        self.held_command: dict | None = None  # the trial whose outputs the reference's ranks hold
        # Where the judging phase's wall time goes, in seconds (``phases_s["judge_parts"]``): the two groups'
        # commands by kind, reading their output files, comparing. What the overhead benchmark needs to say which
        # part of a slow problem to shorten.
        self.spent: collections.defaultdict[str, float] = collections.defaultdict(float)

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
            raise _Stop(
                schema.INFRA_ERROR,
                f"reference rank {exc.rank} failed ({exc.kind}): {exc.message}",
                reference_command=None if exc.kind == schema.INFRA_ERROR else again,
            ) from exc
        finally:
            self.cand.resume()

    def _cand_command(self, cmd: dict, timeout: float) -> list[dict]:
        """Run a command on the candidate with the reference stopped (see RankGroup.pause: same conditions for both)."""
        self.ref.pause()
        try:
            return self._timed_command(self.cand, cmd, timeout)
        except GroupFailure as exc:
            raise _Stop(_candidate_verdict(exc.kind), f"rank {exc.rank}: {exc.message}") from exc
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
            self.spent[f"{'reference' if group is self.ref else 'candidate'}_{cmd.get('cmd')}"] += (
                self.last_wall_ms / 1e3
            )
            if quiet:
                self.bystanders.release()

    def start(self) -> dict | None:
        try:
            try:
                ready = self.ref.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                # An init failure (kind infra_error) is the platform's; a reference rank dying or hanging after it
                # could be the candidate's doing (it started at the same time): _run_once checks which.
                raise _Stop(
                    schema.INFRA_ERROR,
                    f"reference ranks failed to start ({exc.kind}): {exc.message}",
                    reference_command=None if exc.kind == schema.INFRA_ERROR else {"cmd": "noop"},
                ) from exc
            self.environment = ready[0].get("env") or {}
            try:
                self.cand.collect(self.cfg.startup_timeout_s)
            except GroupFailure as exc:
                if exc.kind == schema.INFRA_ERROR and self.cand.sandbox is not None and self.cand.sandbox.enabled:
                    raise _Stop(
                        schema.INFRA_ERROR,
                        f"candidate ranks could not start inside the sandbox (before any "
                        f"candidate code ran): rank {exc.rank}: {exc.message}",
                    ) from exc
                raise _Stop(_candidate_verdict(exc.kind, loading=True), f"rank {exc.rank}: {exc.message}") from exc
        except _Stop as stop:
            return stop.as_result()
        return None

    def load(self, candidate: str, shape: dict | None = None) -> dict | None:
        """Switch both groups to this problem: a trusted self-check's next problem, or a warm spare's job (with the
        job's ``shape``; the candidate's code runs for the first time in those processes here)."""
        problem = str(self.prob.id)
        try:
            self._ref_command(self.ref.load_command(problem, "reference", shape), self.cfg.startup_timeout_s)
            self._cand_command(self.cand.load_command(problem, candidate, shape), self.cfg.startup_timeout_s)
        except _Stop as stop:
            return stop.as_result()
        return None

    def judge(self, seeds: list[int], timing: bool | None = None) -> dict:
        trials: list[dict] = []
        try:
            estimates = []
            for t, seed in enumerate(seeds[:-1]):
                record, est = self._trial(t, seed, tag=f"t{t}")
                trials.append(record)
                estimates.append(est)
                if record["verdict"] != schema.CORRECT:
                    return {
                        "verdict": schema.INCORRECT,
                        "trials": trials,
                        "message": f"trial {t}: {_first_mismatch(record)}",
                    }
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
                    return {
                        "verdict": schema.INCORRECT,
                        "trials": trials,
                        "timing": None,
                        "message": f"a timed call's output was wrong: {problem}",
                    }
                record, _ = self._trial(len(seeds) - 1, seeds[-1], tag="post")
                record["after_timing"] = True
                trials.append(record)
                if record["verdict"] != schema.CORRECT:
                    return {
                        "verdict": schema.INCORRECT,
                        "trials": trials,
                        "timing": None,
                        "message": f"outputs changed after the timed loop: {_first_mismatch(record)}",
                    }
            hidden_note = None
            if self.cfg.hidden_shape:
                try:
                    record = self._hidden_shape_trial(seeds[-1])
                except _Stop as stop:
                    if stop.verdict == schema.INFRA_ERROR:  # fails closed (evaluation.evaluate): re-run, then
                        stop.unjudged = "the hidden-shape check"  # unverified, never skipped
                    raise
                if record["verdict"] == "skipped":
                    hidden_note = record
                else:
                    trials.append(record)
                    if record["verdict"] != schema.CORRECT:
                        shape = record["hidden_shape"]
                        return {
                            "verdict": schema.INCORRECT,
                            "trials": trials,
                            "timing": None,
                            "message": f"at the hidden shape M={shape['M']}, N={shape['N']}: {_first_mismatch(record)}",
                        }
            flags = list(timing_doc.pop("_flags")) if timing_doc else []
            message = f"all {len(trials)} trials correct on {self.cfg.world_size} rank(s)"
            differs = _dtype_differs(trials)
            if differs:  # correct within tolerance in another floating dtype: shown, never faster (docs/dtype.md)
                flags.append(schema.FLAG_DTYPE_DIFFERS)
                message += f"; output dtype differs from the reference's ({differs}): flagged, never faster"
            out = {
                "verdict": schema.CORRECT,
                "trials": trials,
                "timing": timing_doc,
                "flags": flags,
                "message": message,
            }
            if hidden_note:  # asked for but not run: say so, rather than leave no trace
                out["hidden_shape"] = hidden_note
            return out
        except _Stop as stop:
            out = stop.as_result()
            out["trials"] = trials
            return out

    def _secret_seed(self, seeds: list[int], *key) -> int:
        """A seed the candidate cannot know in advance: drawn from the OS in every mode. Anything derived from the
        trial seeds (public in feedback runs, given on the command line with ``--seed``) would let a candidate
        compute the timing blocks' inputs or the hidden shape ahead. ``seeds`` and ``key`` name the draw for readers;
        they feed nothing."""
        return random.SystemRandom().getrandbits(62)

    def _hold_reference(self, cmd: dict) -> list[dict]:
        """Run a trial on the reference's ranks, which hold its outputs for the ``check`` that follows."""
        self.held_command = dict(cmd, hold=True)
        replies = self._ref_command(self.held_command, self.timeout)
        self.output_bytes = max([self.output_bytes] + [x["nbytes"] for x in replies if type(x.get("nbytes")) is int])
        return replies

    def _check(self, tag: str, directory: str, files: list[str | None]) -> list[dict | None]:
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

    def _trial(self, index: int, seed: int, tag: str, shape: dict | None = None) -> tuple[dict, float]:
        cmd = dict({"cmd": "trial", "trial": index, "seed": seed, "tag": tag}, **(shape or {}))
        ref_replies = self._hold_reference(cmd)
        cand_replies = self._cand_command(cmd, self.timeout)
        cand_wall_ms = self.last_wall_ms  # the judge's clock: what the candidate's reported call time cannot exceed
        # Every rank is given a file, so every reference rank's reply holds a comparison record (none is None).
        checked = self._check(tag, self.cand.out_dir, [f"{tag}_r{r}.pt" for r in range(self.cfg.world_size)])
        ranks = cast("list[dict]", checked)
        ok = all(entry["ok"] for entry in ranks)
        ref_ms, cand_ms = _call_ms(ref_replies, "ref"), min(_call_ms(cand_replies, "cand"), cand_wall_ms)
        self.build_ms = max(self.build_ms, max(float(x.get("build_ms", 0.0)) for x in ref_replies))
        self.inside_s += (ref_ms + cand_ms) / 1e3
        record = {
            "trial": index,
            "seed": seed,
            "verdict": schema.CORRECT if ok else schema.INCORRECT,
            "ranks": ranks,
            "output_shapes": ref_replies[0].get("shapes"),
            "reference_call_ms": round(ref_ms, 4),
            "candidate_call_ms": round(cand_ms, 4),
        }
        return record, max(ref_ms, cand_ms)

    def _hidden_shape_trial(self, seed: int) -> dict:
        """One more trial at a shape the judge draws now; a ``skipped`` record where there is none to draw or the
        reference cannot run it."""
        rng = random.Random(self._secret_seed([seed], "hidden-shape"))
        shape = {
            "M": _other_size(self.cfg.M, self.cfg.world_size, rng),
            "N": _other_size(self.cfg.N, self.cfg.world_size, rng),
        }
        if shape == {"M": self.cfg.M, "N": self.cfg.N}:
            return {
                "verdict": "skipped",
                "message": f"M={self.cfg.M}, N={self.cfg.N} are too small to draw another shape",
            }
        hidden_seed = self._secret_seed([seed], "hidden-trial")
        probe = {"cmd": "trial", "trial": 0, "seed": hidden_seed, "tag": "probe", "hold": True, **shape}
        self.cand.pause()
        try:  # held and never checked: the next trial drops it
            self.ref.command(probe, self.timeout)
        except GroupFailure as exc:
            if exc.kind == schema.RUNTIME_ERROR:
                # The reference's own code refuses that shape: nothing to hold the candidate to.
                return {
                    "verdict": "skipped",
                    "message": f"the reference does not run at the drawn shape M={shape['M']}, N={shape['N']}: "
                    f"{exc.message[:300]}",
                }
            # Died, hung or garbled (kind exited, timeout, protocol): not a property of the shape, so the check was
            # not judged, which is never a pass (re-run, then unverified; a fresh reference passing it alone makes it
            # the candidate's interference, attempt._blame).
            raise _Stop(
                schema.INFRA_ERROR,
                f"reference rank {exc.rank} failed ({exc.kind}) at the hidden shape "
                f"M={shape['M']}, N={shape['N']}: {exc.message}",
                reference_command=dict(probe, hold=False),
            ) from exc
        finally:
            self.cand.resume()
        record, _ = self._trial(0, hidden_seed, tag="hidden", shape=shape)
        record["hidden_shape"] = shape
        return record

    def _time(self, seeds: list[int], estimate_ms: float, reference_estimate_ms: float | None = None) -> dict:
        """The timing blocks (evaluator/judge/schedule.py): the pair's timing document."""
        return Schedule(self, seeds, estimate_ms, reference_estimate_ms).run()

    def _verify_timed(self, kept: list[dict]) -> tuple[int, str | None]:
        """Run the reference on the inputs of every kept timed call and compare."""
        by_seed: dict[int, list[dict]] = {}
        for item in kept:
            by_seed.setdefault(item["seed"], []).append(item)
        checks = 0
        for n, (seed, items) in enumerate(by_seed.items()):
            self._hold_reference({"cmd": "trial", "trial": 0, "seed": seed, "tag": f"v{n}"})
            files: list[str | None] = [None] * self.cfg.world_size
            for item in items:
                files[item["rank"]] = item["file"]
            entries = self._check(f"v{n}", self.ref.out_dir, files)
            for item in items:
                entry = entries[item["rank"]]
                checks += 1
                if not entry["ok"]:
                    where = entry.get("where") or "output"
                    return checks, (
                        f"block {item['block']}, call {item['call']}, rank {item['rank']}, {where}: "
                        f"{entry.get('message')}"
                    )
        return checks, None

    def close(self):
        close_all([self.cand, self.ref])


def _other_size(size: int, world_size: int, rng: random.Random) -> int:
    """A size between size/2 and size, a multiple of 16*W (what sharded dimensions need), different from ``size``."""
    unit = 16 * max(1, world_size)
    choices = [k * unit for k in range(1, size // unit + 1) if k * unit != size and 2 * k * unit >= size]
    return rng.choice(choices) if choices else size


def _dtype_differs(trials: list[dict]) -> str:
    """The comparisons' notes of floating outputs that passed in another dtype (problems/tolerance.py), first one."""
    notes = list(
        dict.fromkeys(
            note for t in trials for entry in t.get("ranks") or [] if entry for note in entry.get("dtype_differs") or []
        )
    )
    return notes[0] + (f" and {len(notes) - 1} more" if len(notes) > 1 else "") if notes else ""


def _candidate_verdict(kind: str, loading: bool = False) -> str:
    if kind == SHARED_WORLD_LIMIT:  # the shared-device world's own bound: the candidate's logic is left unjudged
        return schema.UNVERIFIED
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
