"""benchmarks/throughput.py: the schedule's arithmetic on small synthetic sets (no judge, no site, no GPU)."""

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "throughput", Path(__file__).resolve().parents[1] / "benchmarks" / "throughput.py"
)
throughput = importlib.util.module_from_spec(_SPEC)
sys.modules["throughput"] = throughput  # its dataclasses look their module up while the class is made
_SPEC.loader.exec_module(throughput)
FileTimes, Layout, simulate = throughput.FileTimes, throughput.Layout, throughput.simulate


def plain(name, seconds, dispatch=0.0):
    return FileTimes(name=name, compiled=False, reference=seconds, dispatch=dispatch)


def compiled(name, stage, job, stage_compile=0.0, build=0.0):
    return FileTimes(name=name, compiled=True, stage=stage, stage_compile=stage_compile, build=build, candidate=job)


def test_plain_jobs_split_over_workers_and_gpu_held_counts_every_gpu():
    files = [plain(f"f{i}", 10.0) for i in range(4)]
    one = simulate(files, Layout("1xW1", 1, 1, 1), stage_on=True)
    assert (one.wall_s, one.gpu_held_s, one.jobs) == (40.0, 40.0, 4)
    assert simulate(files, Layout("2xW1", 2, 1, 1), stage_on=True).wall_s == 20.0
    assert simulate(files, Layout("8xW1", 8, 1, 1), stage_on=True).wall_s == 10.0
    eight = simulate(files, Layout("1xW8", 1, 8, 1), stage_on=True)
    assert (eight.wall_s, eight.gpu_held_s) == (40.0, 320.0)
    assert simulate(files, Layout("1xW8", 1, 8, 1), stage_on=True, job_scale=1.5).wall_s == 60.0


def test_builds_share_the_slots_and_a_job_waits_for_its_build():
    files = [
        compiled("a", 30.0, 5.0, stage_compile=25.0),
        compiled("b", 30.0, 5.0, stage_compile=25.0),
        plain("c", 10.0),
    ]
    one_slot = simulate(files, Layout("1xW1", 1, 1, 1), stage_on=True)
    assert one_slot.wall_s == 65.0  # c 0-10, builds 0-30 and 30-60, a 30-35, b 60-65
    assert one_slot.gpu_held_s == 20.0 and one_slot.build_in_job_s == 0.0 and one_slot.stage_cpu_s == 60.0
    assert simulate(files, Layout("1xW1", 1, 1, 2), stage_on=True).wall_s == 40.0  # builds 0-30 together
    off = simulate(files, Layout("1xW1", 1, 1, 2), stage_on=False)
    assert (off.wall_s, off.gpu_held_s, off.build_in_job_s) == (70.0, 70.0, 50.0)  # each job compiles its 25 s
    assert off.compile_share == pytest.approx(50.0 / 70.0)
    assert one_slot.compile_share == 0.0


def test_a_compile_error_found_by_the_stage_has_no_gpu_job_and_one_without_it():
    broken = FileTimes(name="broken", compiled=True, stage=20.0, stage_compile=15.0, gpu_job=False)
    on = simulate([broken, plain("p", 10.0)], Layout("1xW1", 1, 1, 1), stage_on=True)
    assert (on.jobs, on.gpu_held_s, on.wall_s) == (1, 10.0, 20.0)
    off = simulate([broken, plain("p", 10.0)], Layout("1xW1", 1, 1, 1), stage_on=False)
    assert (off.jobs, off.gpu_held_s, off.build_in_job_s, off.wall_s) == (2, 30.0, 15.0, 30.0)


def test_measured_times_without_the_stage_win_over_the_estimate():
    f = compiled("a", 30.0, 5.0, stage_compile=25.0)
    f.without_stage = FileTimes(name="a", compiled=True, build=40.0, candidate=6.0, dispatch=1.0)
    off = simulate([f], Layout("1xW1", 1, 1, 1), stage_on=False)
    assert (off.wall_s, off.gpu_held_s, off.build_in_job_s) == (47.0, 46.0, 40.0)


def test_gap_and_dispatch_occupy_the_worker_but_are_not_gpu_held():
    files = [plain(f"f{i}", 10.0, dispatch=2.0) for i in range(3)]
    outcome = simulate(files, Layout("1xW1", 1, 1, 1), stage_on=True, gap_s=1.0)
    assert outcome.wall_s == 3 * 12.0 + 2 * 1.0
    assert outcome.gpu_held_s == 30.0


def test_layouts_parse_and_bad_ones_are_refused():
    layout = throughput.parse_layout("8xW1@16", default_slots=4)
    assert (layout.workers, layout.gpus_per_job, layout.slots) == (8, 1, 16)
    assert throughput.parse_layout("1xW8", default_slots=4).slots == 4
    for bad in ("8x1", "0xW1", "1xW0", "8xW1@"):
        with pytest.raises(argparse.ArgumentTypeError):
            throughput.parse_layout(bad, default_slots=4)


def test_projection_keeps_the_measured_share_of_compiled_files_and_their_medians():
    measured = [compiled("a", 30.0, 4.0), compiled("b", 50.0, 6.0), compiled("c", 40.0, 8.0), plain("d", 10.0)]
    projected = throughput.project_count(measured, 8)
    assert len(projected) == 8 and sum(f.compiled for f in projected) == 6
    assert {f.stage for f in projected if f.compiled} == {40.0}
    assert {f.candidate for f in projected if f.compiled} == {6.0}
    assert {f.job for f in projected if not f.compiled} == {10.0}


def test_a_run_summary_is_read_into_phases(tmp_path):
    document = {
        "verdict": "correct",
        "wall_s": 12.0,
        "build": {"compile_s": 2.0},
        "phases_s": {
            "start": 4.0,
            "judge": 7.5,
            "close": 0.5,
            "judge_parts": {
                "reference_trial": 1.0,
                "reference_check": 0.5,
                "read_outputs": 0.25,
                "compare": 0.25,
                "candidate_trial": 3.0,
                "reference_time": 1.5,
                "candidate_time": 1.5,
                "take_kept": 0.5,
                "other": 0.5,
            },
        },
    }
    row = {
        "file": "attempt_1/1_allreduce_cuda.py",
        "job": 7,
        "verdict": "correct",
        "build_status": "built",
        "stage_s": 50.0,
        "stage_compile_s": 45.0,
        "gpu_held_s": 12.0,
        "wall_s": 12.0,
        "compile_in_job_s": 2.0,
        "phases_s": document["phases_s"],
        "started_at": "2026-12-05T06:00:00+00:00",
        "finished_at": "2026-12-05T06:00:15+00:00",
    }
    summary = {
        "profile": "gpu-h200x1",
        "profile_fields": {"world_size": 1},
        "passes": {"stage": {"rows": [row], "totals": {"wall_s_created_to_last_finish": 70.0, "gpu_held_s": 12.0}}},
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "stage.json").write_text(json.dumps({"jobs": [{"job": 7, "final": {"document": document}}]}))
    files, without, facts = throughput.load_summary(path)
    assert without == []
    (f,) = files
    assert f.compiled and f.gpu_job and f.stage == 50.0 and f.stage_compile == 45.0 and f.build == 2.0
    assert (f.reference, f.candidate, f.timing) == (2.0, 3.0, 3.5)
    assert f.other == pytest.approx(12.0 - 2.0 - 8.5)
    assert f.dispatch == pytest.approx(3.0) and f.job == pytest.approx(12.0)
    assert facts["world_size"] == 1 and facts["measured"]["stage"]["wall_s"] == 70.0
    rows = throughput.table(files, [Layout("1xW1", 1, 1, 4)], facts, 0.0, {}, "measured files")
    assert rows[0]["measured"]["stage_on"]["wall_s"] == 70.0
    assert rows[0]["stage_on"]["gpu_held_s"] == 12.0


def test_a_pass_without_the_stage_from_another_summary_is_attached_by_file_name():
    files = [compiled("attempt_1/1_allreduce_cuda.py", 60.0, 5.0, stage_compile=55.0), plain("attempt_2/x.py", 8.0)]
    measured_off = FileTimes(name="attempt_1/1_allreduce_cuda.py", compiled=True, build=58.0, candidate=5.0)
    throughput.attach_without_stage(files, [measured_off])
    assert files[0].without_stage is measured_off and files[1].without_stage is None
    assert throughput.without_stage(files[0]) == (63.0, 58.0, 0.0)


def test_a_build_made_inside_the_candidates_first_trial_is_counted_once():
    document = {
        "verdict": "correct",
        "wall_s": 30.0,
        "build": {"compile_s": 20.0},
        "phases_s": {"judge_parts": {"candidate_trial": 22.0, "reference_trial": 3.0, "candidate_time": 2.0}},
    }
    f = throughput.from_document("lazy.py", document)
    assert (f.build, f.candidate, f.reference, f.timing) == (20.0, 5.0, 3.0, 2.0)
    assert f.job == pytest.approx(30.0)
