"""The mutation pass of issue 45 (item 9, "Done when"): one small, plausible break of one layer of the box, the verdict
path, the build stage, scoring or access at a time, and the few tests that must fail when it is applied.

The tracked tree (``git ls-files`` plus untracked files git does not ignore) is copied once to a temporary directory;
each mutation is applied there to its one file (its original text must occur exactly once, else it is ``stale``),
its tests run in the copy (cwd and PYTHONPATH the copy, so the copy's packages are the ones imported: checked before
the pass), and the file is restored. A mutation whose tests all pass ``SURVIVED``: a layer nothing pins.

    .venv/bin/python benchmarks/mutation_pass.py [--only NAME ...] [--json PATH] [--no-baseline] [--list]

Exit 1 if any mutation survived or is stale (or the baseline, the tests on the unmutated copy, failed). The source
tree is never written: only the copy and the JSON report. docs/testing.md, "Mutation pass"."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"
TEST_TIMEOUT_S = 600

# Test node ids, by file.
LAYERS = "tests/redteam/test_box_layers.py::"
LIMITS = "tests/redteam/test_box_limits.py::"
CLEANUP = "tests/redteam/test_box_cleanup.py::"
BOUNDARY = "tests/redteam/test_judge_boundary.py::"
E2E = "tests/evaluator/test_judge_e2e.py::"
PINNED = "tests/site/security/test_layers_pinned.py::"
LOCKOUT = "tests/site/security/test_lockout_proxy.py::"
KEY = "tests/evaluator/test_build_cache_key.py::"


@dataclasses.dataclass(frozen=True)
class Mutation:
    name: str
    group: str  # "item 9" (the first pass's survivors) or "session" (this session's defences)
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


M = Mutation
MUTATIONS = [
    # --- issue 45, item 9: the first pass's twelve survivors ----------------------------------------------------------
    M(
        "box id lock shared",
        "item 9",
        "evaluator/process/boxes.py",
        "            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "        except OSError as exc:\n            os.close(fd)",
        "            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n"
        "        except OSError as exc:\n            os.close(fd)",
        (LAYERS + "test_the_box_id_lock_refuses_a_second_holder",),
    ),
    M(
        "memory limit not written (v1)",
        "item 9",
        "evaluator/process/cgroups.py",
        '        _write(self._file("memory", "memory.limit_in_bytes"), str(self.memory_bytes))',
        "        pass",
        (LAYERS + "test_the_memory_and_pids_limits_are_the_kernels_and_the_box_kills_its_own_hog",),
    ),
    M(
        "pids limit not written (v1)",
        "item 9",
        "evaluator/process/cgroups.py",
        '        _write(self._file("pids", "pids.max"), str(self.pids_max))\n\n    # --- joining',
        "        pass\n\n    # --- joining",
        (LAYERS + "test_the_memory_and_pids_limits_are_the_kernels_and_the_box_kills_its_own_hog",),
    ),
    M(
        "box init never reaps",
        "item 9",
        "evaluator/process/box_init.py",
        "                if os.waitpid(-1, os.WNOHANG)[0] == 0:",
        "                if True:",
        (LAYERS + "test_the_boxs_init_reaps_orphans_during_the_job",),
    ),
    M(
        "box tmpfs unbounded in bytes",
        "item 9",
        "evaluator/process/boxes.py",
        'options = f"size={int(size_bytes)},nr_inodes=65536,mode=0755".encode()',
        'options = b"nr_inodes=65536,mode=0755"',
        (LIMITS + "test_scratch_and_tmp_are_bounded_in_bytes_and_files",),
    ),
    M(
        "no cgroup kill at the end of the job",
        "item 9",
        "evaluator/process/box_control.py",
        "            self.cgroup.kill()\n            if self.cgroup.left:",
        "            pass\n            if self.cgroup.left:",
        (LAYERS + "test_the_end_of_job_cgroup_kill_alone_leaves_no_process",),
    ),
    M(
        "re-check after timing ignored",
        "item 9",
        "evaluator/judge/pair.py",
        '                trials.append(record)\n                if record["verdict"] != schema.CORRECT:',
        "                trials.append(record)\n                if False:",
        (E2E + "test_wrong_only_after_the_timed_loop_is_caught_by_the_recheck",),
    ),
    M(
        "atol doubled in the fast check",
        "item 9",
        "problems/tolerance.py",
        "bool((diff <= magnitude * rtol + atol).all())",
        "bool((diff <= magnitude * rtol + 2 * atol).all())",
        ("tests/evaluator/test_compare.py::test_an_atol_dominated_boundary_fails_past_atol_and_passes_within_it",),
    ),
    M(
        "build key without CUDA and Python",
        "item 9",
        "evaluator/process/builds.py",
        'toolchain = f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:3]}|{device}"',
        'toolchain = f"{torch.__version__}|{device}"',
        (KEY + "test_the_key_changes_with_torch_cuda_and_python",),
    ),
    M(
        "build key without torch",
        "item 9",
        "evaluator/process/builds.py",
        'toolchain = f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:3]}|{device}"',
        'toolchain = f"{torch.version.cuda}|{sys.version_info[:3]}|{device}"',
        (KEY + "test_a_build_kept_under_one_torch_is_not_restored_under_another",),
    ),
    M(
        "Triton cache not the group's",
        "item 9",
        "evaluator/process/environment.py",
        '            TRITON_CACHE_DIR=os.path.join(build_dir, "triton_cache"),\n',
        "",
        (KEY + "test_triton_s_cache_is_the_group_s_own",),
    ),
    M(
        "peak fraction counts as faster",
        "item 9",
        "leaderboard/scoring/services.py",
        "faster=sum(1 for s in correct if s.faster),",
        "faster=sum(1 for s in correct if s.faster or (s.peak_fraction or 0) >= 0.9),",
        (PINNED + "test_a_correct_result_near_peak_that_is_not_faster_counts_faster_zero",),
    ),
    M(
        "audit service checks no staff bit",
        "item 9",
        "leaderboard/scoring/services.py",
        "    if not (auditor and auditor.is_staff):",
        "    if auditor is None:",
        (PINNED + "test_the_audit_service_refuses_a_non_staff_auditor_by_itself",),
    ),
    M(
        "login lock-out threshold 20",
        "item 9",
        "leaderboard/settings.py",
        'AXES_FAILURE_LIMIT = env_int("PKB_LOGIN_FAILURE_LIMIT", 10, minimum=1)',
        'AXES_FAILURE_LIMIT = env_int("PKB_LOGIN_FAILURE_LIMIT", 20, minimum=1)',
        (LOCKOUT + "test_the_production_threshold_is_ten_failures_and_fifteen_minutes",),
    ),
    # --- this session's defences --------------------------------------------------------------------------------------
    M(
        "reply line unbounded",
        "session",
        "evaluator/process/protocol.py",
        "        if len(r.buffer) > MAX_LINE_BYTES:",
        "        if len(r.buffer) > 64 * MAX_LINE_BYTES:",
        (BOUNDARY + "test_an_endless_reply_line_is_reported_once_and_never_kept",),
    ),
    M(
        "reply read not sliced (deadline only between reads)",
        "session",
        "evaluator/process/protocol.py",
        "    while taken < READ_SLICE_BYTES:",
        "    while True:",
        (BOUNDARY + "test_one_read_takes_a_bounded_slice_of_an_endless_writer",),
    ),
    M(
        "JSON depth not checked",
        "session",
        "evaluator/process/protocol.py",
        "    if _nesting(line) > MAX_JSON_DEPTH:",
        "    if _nesting(line) > 1000 * MAX_JSON_DEPTH:",
        (BOUNDARY + "test_a_reply_line_nested_100000_deep_is_the_candidates_runtime_error",),
    ),
    M(
        "JSON RecursionError not caught",
        "session",
        "evaluator/process/protocol.py",
        "    except (ValueError, RecursionError, MemoryError) as exc:  # UnicodeDecodeError is a ValueError",
        "    except ValueError as exc:  # UnicodeDecodeError is a ValueError",
        (BOUNDARY + "test_a_reply_too_deep_for_the_parser_is_a_protocol_failure_even_past_the_depth_scan",),
    ),
    M(
        "reply error text unbounded",
        "session",
        "evaluator/process/protocol.py",
        '    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"',
        "    return text",
        (BOUNDARY + "test_a_replys_error_of_any_type_and_size_becomes_a_bounded_message",),
    ),
    M(
        "compressed output records accepted",
        "session",
        "evaluator/rank/outputs.py",
        "        if info.compress_type != zipfile.ZIP_STORED:",
        "        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):",
        (BOUNDARY + "test_a_trusted_loader_never_allocates_what_a_bombs_record_declares",),
    ),
    M(
        "records' declared size not checked",
        "session",
        "evaluator/rank/outputs.py",
        "    if declared > max_bytes:",
        "    if False:",
        (BOUNDARY + "test_stored_records_declaring_more_than_the_output_allows_are_refused",),
    ),
    M(
        "fault attributed before candidate code ran",
        "session",
        "evaluator/judge/attempt.py",
        "    if isinstance(exc, CandidateFault) and cand is not None and cand.candidate_ran():",
        "    if isinstance(exc, CandidateFault) and cand is not None:",
        (BOUNDARY + "test_a_fault_on_the_candidates_group_is_its_verdict_once_its_code_ran",),
    ),
    M(
        "freezer's stuck box not killed",
        "session",
        "evaluator/process/cgroups.py",
        "                self.kill()\n                what = ",
        "                what = ",
        (CLEANUP + "test_a_box_that_cannot_be_frozen_is_killed_and_is_the_candidates_policy_violation",),
    ),
    M(
        "box with surviving processes not quarantined",
        "session",
        "evaluator/process/box_control.py",
        "                box.release(clean=not self.failures, reason=reason)",
        "                box.release(clean=True, reason=reason)",
        (CLEANUP + "test_a_box_whose_processes_outlive_the_kill_is_quarantined_then_swept",),
    ),
    M(
        "dead sibling rank is the platform's",
        "session",
        "evaluator/process/protocol.py",
        '                        kind = "exited" if trusted or candidate_ran(ranks) else "infra_error"',
        '                        kind = "exited" if trusted or r.initialized else "infra_error"',
        (BOUNDARY + "test_a_sibling_rank_killed_before_its_start_up_ended_is_the_candidates",),
    ),
    M(
        "sibling's infra claim believed",
        "session",
        "evaluator/process/protocol.py",
        '        if kind == "infra_error" and not trusted and (r.initialized or candidate_ran(ranks)):',
        '        if kind == "infra_error" and not trusted and r.initialized:',
        (BOUNDARY + "test_a_platform_failure_claimed_for_a_sibling_rank_is_not_believed",),
    ),
    M(
        "hidden world size unjudged counts as pass",
        "session",
        "evaluator/judge/evaluation.py",
        "            result.update(\n                verdict=schema.UNVERIFIED,\n                timing=None,\n"
        "                flags=[],\n"
        '                message=f"the hidden world-size check',
        '            record.update(verdict="skipped")\n            result.update(\n'
        '                message=f"the hidden world-size check',
        (BOUNDARY + "test_a_hidden_world_size_check_that_cannot_be_judged_twice_is_unverified",),
    ),
    M(
        "hidden world size not re-run",
        "session",
        "evaluator/judge/evaluation.py",
        "        for attempt in (1, 2):\n            outcome = _run_once(prob, candidate, hidden_cfg",
        "        for attempt in (1,):\n            outcome = _run_once(prob, candidate, hidden_cfg",
        (BOUNDARY + "test_a_hidden_world_size_check_judged_on_its_second_run_decides",),
    ),
    M(
        "hidden shape unjudged not re-run",
        "session",
        "evaluator/judge/evaluation.py",
        '        if attempt >= max(cfg.max_attempts, 2 if result.get("_unjudged") else 1):',
        "        if attempt >= cfg.max_attempts:",
        (BOUNDARY + "test_a_hidden_shape_check_that_cannot_be_judged_is_unverified_after_a_second_run",),
    ),
    M(
        "a timing pair lost to the candidate dropped",
        "session",
        "evaluator/judge/evaluation.py",
        '        if outcome["verdict"] != schema.CORRECT:\n            result.update(\n'
        '                verdict=outcome["verdict"],\n                timing=None,\n                flags=[],\n'
        '                message=f"in timing pair',
        "        if False:\n            result.update(\n"
        '                verdict=outcome["verdict"],\n                timing=None,\n                flags=[],\n'
        '                message=f"in timing pair',
        ("tests/evaluator/test_pairs.py::test_a_candidate_wrong_in_a_later_pair_is_incorrect",),
    ),
    M(
        "a timing pair the platform failed not re-run",
        "session",
        "evaluator/judge/evaluation.py",
        "        for attempt in (1, 2):  # a pair the platform failed is run once more before it is dropped",
        "        for attempt in (1,):  # a pair the platform failed is run once more before it is dropped",
        (BOUNDARY + "test_a_timing_pair_the_platform_failed_is_run_once_more_before_it_is_dropped",),
    ),
    M(
        "seccomp filter not installed",
        "session",
        "evaluator/process/box_entry.py",
        "        self._seccomp_fd = seccomp.open_program()",
        "        self._seccomp_fd = None",
        (LIMITS + "test_no_user_namespace_can_be_made_inside_the_box",),
    ),
    M(
        "cpuset of every core (v1)",
        "session",
        "evaluator/process/cgroups.py",
        '            _write(self._file("cpuset", "cpuset.cpus"), limits.cpu_list(self.cpus))\n'
        "            _write(\n"
        '                self._file("cpuset", "cpuset.mems")',
        '            _write(self._file("cpuset", "cpuset.cpus"), limits.cpu_list(range(os.cpu_count())))\n'
        "            _write(\n"
        '                self._file("cpuset", "cpuset.mems")',
        (
            LIMITS + "test_a_box_cannot_widen_its_cores",
            LIMITS + "test_the_box_reads_back_its_cpuset_and_its_pids_limits",
        ),
    ),
    M(
        "scratch unbounded in files",
        "session",
        "evaluator/process/boxes.py",
        'options = f"size={int(size_bytes)},nr_inodes={int(files)},mode={mode:o}".encode()',
        'options = f"size={int(size_bytes)},mode={mode:o}".encode()',
        (LIMITS + "test_scratch_and_tmp_are_bounded_in_bytes_and_files",),
    ),
    M(
        "every GPU node bound",
        "session",
        "evaluator/process/devices.py",
        '    return control + nodes, ",".join(g["uuid"] for g in chosen)',
        '    return control + every, ",".join(g["uuid"] for g in chosen)',
        (LIMITS + "test_the_view_binds_only_the_judges_own_gpus",),
    ),
    M(
        "build cache entry unbounded in files",
        "session",
        "evaluator/process/builds.py",
        "skip=(LOG_NAME,), limit_files=ENTRY_LIMIT_FILES\n        ):\n            return False",
        "skip=(LOG_NAME,), limit_files=10**9\n        ):\n            return False",
        (LIMITS + "test_the_build_cache_is_bounded_in_files",),
    ),
    M(
        "TMPDIR per rank, not per group",
        "session",
        "evaluator/process/environment.py",
        '        env["TMPDIR"] = group_tmp',
        "        pass",
        (E2E + "test_ranks_of_one_group_share_one_tmpdir",),
    ),
    M(
        "shared-device limit is infra_error",
        "session",
        "evaluator/judge/pair.py",
        "        return schema.UNVERIFIED",
        "        return schema.INFRA_ERROR",
        (
            "tests/evaluator/test_shared_device.py::"
            "test_the_judge_makes_a_shared_world_limit_unverified_and_believes_no_infra_claim_from_the_candidate",
        ),
    ),
    M(
        "client address the leftmost forwarded",
        "session",
        "leaderboard/accounts/throttle.py",
        "            remote = chain[-hops]",
        "            remote = chain[0]",
        (LOCKOUT + "test_ten_wrong_passwords_from_one_client_behind_nginx_do_not_lock_out_another",),
    ),
    M(
        "web starts with the proxy count unstated",
        "session",
        "leaderboard/accounts/throttle.py",
        '    if settings.PKB_TRUSTED_PROXIES_STATED or settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):',
        "    if True:",
        (LOCKOUT + "test_the_start_up_check_refuses_an_unstated_proxy_count_in_production_only",),
    ),
    M(
        "rank log tail follows links",
        "session",
        "evaluator/process/group.py",
        "os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)",
        "os.open(path, os.O_RDONLY | os.O_NONBLOCK)",
        (BOUNDARY + "test_a_rank_log_is_read_bounded_and_only_from_a_plain_file",),
    ),
    M(
        "faster at p without the withholding (judge)",
        "session",
        "evaluator/contract/verdict.py",
        "    return low is not None and is_faster(low, flagged, reference_timed_its_host) and low > p",
        "    return low is not None and low > p",
        ("tests/test_one_decision.py::test_faster_at_each_bar_is_faster_and_the_bound_above_the_bar",),
    ),
    M(
        "fast_1.5 counted without faster (site)",
        "session",
        "leaderboard/scoring/services.py",
        "    score.faster_1_5 = bool(score.faster and at[schema.bar_key(1.5)])",
        "    score.faster_1_5 = bool(at[schema.bar_key(1.5)])",
        (
            "tests/site/services/test_fast_p_follows_the_judge.py::"
            "test_a_score_that_does_not_count_as_correct_is_faster_at_no_bar",
        ),
    ),
]


def tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode().split("\0") if name]


def copy_tree(dest: Path) -> None:
    for name in tracked_files():
        source = REPO / name
        if not source.is_file() or source.is_symlink():
            continue  # deleted in the working tree, or a link (none the tests need)
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def environment(copy: Path) -> dict:
    env = dict(
        os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", PKB_TEST_DATABASE_NAME="test_pkb_arena_mutation"
    )
    return env


def imports_from_copy(copy: Path) -> None:
    """The copy's packages are the ones imported, in the test process (cwd) and in a child started elsewhere
    (PYTHONPATH); else a mutation would be tested against the source tree's code and look like a survivor or a kill."""
    probe = (
        "import evaluator.process.protocol as p, leaderboard.settings as s, problems.tolerance as t;"
        "print(p.__file__, s.__file__, t.__file__)"
    )
    for cwd in (copy, Path("/")):
        done = subprocess.run(
            [str(PYTHON), "-c", probe], cwd=cwd, env=environment(copy), capture_output=True, text=True, check=True
        )
        files = done.stdout.split()
        if not files or not all(f.startswith(str(copy) + os.sep) for f in files):
            sys.exit(f"the copy's packages are not the ones imported (cwd {cwd}): {files}")


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    began = time.monotonic()
    try:
        done = subprocess.run(
            [str(PYTHON), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=copy,
            env=environment(copy),
            capture_output=True,
            text=True,
            timeout=TEST_TIMEOUT_S,
        )
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = -1, f"timed out after {TEST_TIMEOUT_S} s: {(exc.stdout or b'')[-2000:]!r}"
    return code, time.monotonic() - began, output


def summary_line(output: str) -> str:
    """pytest's last line, after the first failure's line of its short summary (which test failed) if there is one."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    failed = next((line for line in lines if line.startswith(("FAILED ", "ERROR "))), "")
    return ((failed.split(" - ", 1)[-1][:160] + " | ") if failed else "") + (lines[-1][:80] if lines else "")


def apply_and_test(copy: Path, mutation: Mutation) -> dict:
    target = copy / mutation.path
    record = {"name": mutation.name, "group": mutation.group, "path": mutation.path, "tests": list(mutation.tests)}
    original = target.read_text() if target.exists() else ""
    count = original.count(mutation.old)
    if count != 1:
        return dict(record, status="stale", seconds=0.0, detail=f"the original text occurs {count} times")
    missing = [t for t in mutation.tests if not (copy / t.split("::")[0]).exists()]
    if missing:
        return dict(record, status="stale", seconds=0.0, detail=f"no such test file: {missing}")
    mutated = original.replace(mutation.old, mutation.new)
    try:
        compile(mutated, mutation.path, "exec")
    except SyntaxError as exc:  # a break of the mutation itself, not of the layer: never counted as killed
        return dict(record, status="stale", seconds=0.0, detail=f"the mutated file does not compile: {exc}")
    target.write_text(mutated)
    try:
        code, seconds, output = run_tests(copy, mutation.tests)
    finally:
        target.write_text(original)
    if code == 0:
        status = "SURVIVED"
    elif code in (1, -1):  # tests failed, or hung past the bound (noted in the detail)
        status = "killed"
    else:  # 2-5: interrupted, internal error, usage error, nothing collected: the test ids are wrong
        status = "stale"
    return dict(record, status=status, seconds=round(seconds, 1), exit_code=code, detail=summary_line(output))


def print_table(records: list[dict]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for r in records:
            print(f"{r['status']:9} {r['seconds']:7.1f} s  {r['group']:8} {r['name']}  ({r['detail']})")
        return
    table = Table(title="Mutation pass")
    for column in ("status", "s", "group", "mutation", "file", "tests said"):
        table.add_column(column)
    colour = {"killed": "green", "SURVIVED": "bold red", "stale": "yellow"}
    for r in records:
        table.add_row(
            f"[{colour[r['status']]}]{r['status']}[/]",
            f"{r['seconds']:.1f}",
            r["group"],
            r["name"],
            r["path"],
            r["detail"],
        )
    Console(width=200).print(table)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "mutation_pass.json"))
    parser.add_argument("--only", nargs="*", help="run only the mutations with these names")
    parser.add_argument("--no-baseline", action="store_true", help="skip the tests on the unmutated copy")
    parser.add_argument("--list", action="store_true", help="list the mutations and whether each applies, then exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.list:
        for m in chosen:
            count = (REPO / m.path).read_text().count(m.old) if (REPO / m.path).exists() else 0
            print(f"{'ok   ' if count == 1 else 'STALE'} {m.group:8} {m.name}  [{m.path}, {len(m.tests)} test(s)]")
        return 0
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pkb-mutation-") as tmp:
        copy = Path(tmp) / "tree"
        copy.mkdir()
        copy_tree(copy)
        imports_from_copy(copy)
        baseline = None
        if not args.no_baseline:
            every = sorted({t for m in chosen for t in m.tests if (copy / t.split("::")[0]).exists()})
            code, seconds, output = run_tests(copy, tuple(every))
            baseline = {
                "exit_code": code,
                "seconds": round(seconds, 1),
                "tests": len(every),
                "detail": summary_line(output),
            }
            print(f"baseline (unmutated copy): exit {code} in {seconds:.0f} s: {baseline['detail']}", flush=True)
        records = []
        for m in chosen:
            records.append(apply_and_test(copy, m))
            r = records[-1]
            print(f"{r['status']:9} {r['seconds']:6.1f} s  {m.name}", flush=True)
    print_table(records)
    counts = {s: sum(1 for r in records if r["status"] == s) for s in ("killed", "SURVIVED", "stale")}
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": sys.version.split()[0],
        "wall_s": round(time.monotonic() - began, 1),
        "counts": counts,
        "baseline": baseline,
        "mutations": records,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print(
        f"{counts['killed']} killed, {counts['SURVIVED']} survived, {counts['stale']} stale "
        f"in {report['wall_s']:.0f} s; report: {args.json}"
    )
    baseline_ok = baseline is None or baseline["exit_code"] == 0
    return 0 if baseline_ok and not counts["SURVIVED"] and not counts["stale"] else 1


if __name__ == "__main__":
    sys.exit(main())
