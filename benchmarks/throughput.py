"""How long a submission takes on a host layout, from measured per-phase times (issue 34): what a lab plans with.

    python benchmarks/throughput.py SUMMARY.json [SUMMARY.json ...] [--kernels DIR | --files 87]
        [--layout 1xW1 --layout 8xW1 --layout 1xW8 ...] [--build-slots 8] [--job-scale 8=1.0] [--json OUT]

Input: the summary benchmarks/gpu_site_run.py wrote (each judged file's job and result, with the build stage's
report), or judge result documents (``pkb eval --json``; no build stage then). Per file it takes these phases:

- ``stage``: the build stage on CPU cores (the job's build report, ``seconds``): no GPU held;
- ``build``: compiling inside the GPU job (the result document's ``build.compile_s``);
- ``reference``, ``candidate``, ``timing``: the judge's parts (``phases_s.judge_parts``): the reference's trials and
  checks (with reading and comparing the candidate's outputs), the candidate's trials (less a lazy build made in
  its first one, which is ``build``), the timing blocks;
- ``other``: the rest of the judge's wall time (``wall_s``): starting and closing the rank groups;
- ``dispatch``: the worker's time on the job outside the judge's wall (the judge process starting, the result
  stored: the job's finished_at - started_at less ``wall_s``); its GPUs are reserved but not counted as GPU-held.

The model (what runs in parallel):

- a layout ``NxWk[@S]`` is N workers, each holding k GPUs (the profile's W = k) and running one job at a time, and S
  build slots (CPU cores' worth of builds at once; default --build-slots) shared by the host's build stage;
- with the stage on, every file that makes a compile call is built first, in upload order, each on the first free
  slot; its GPU job is ready when its build ends (a compile_error found there has no GPU job); a file without a
  compile call is ready at once; ready jobs go to the first free worker in the order they became ready, which is what
  a broker queue with prefetch 1 does; with the stage off every job is ready at once and compiles in its job;
- a job holds its worker for its judge wall plus ``dispatch``; the gap between one job and the next on a worker
  (claiming, the message's way) is the measured median;
- with the stage off, a file's job compiles what the stage compiled: its measured time without the stage where the
  run had a pass without it, else the stage's compile time added to its job (a compile_error the stage found becomes
  a GPU job as long as its stage);
- the submission's wall time is the last job's end; GPU-held seconds are each job's judge wall x k (the Result's
  gpu_seconds); the compile share is ``build`` over GPU-held.

What is measured and what is projected: a run's own wall time and per-file numbers are measured; every schedule is a
projection, checked against the measured wall where the layout and files are the run's own ("model" beside
"measured"). For another file count (``--files 87``) or directory (``--kernels``: each file classed by the same scan
as the site's build routing), each file takes the medians of its class (compiled or not) from the measured files. A
layout whose k differs from the measured profile's W has no measurement of its jobs: their times are the measured
ones times ``--job-scale k=F`` (default 1.0: as long as at the measured W), and the table says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.contract.requests import has_compile_call

PHASES = ("stage", "build", "reference", "candidate", "timing", "other")


@dataclasses.dataclass
class FileTimes:
    """One file's measured (or projected) phases, in seconds."""

    name: str
    compiled: bool  # makes a compile call: the build stage takes it
    stage: float = 0.0  # build stage, CPU cores
    build: float = 0.0  # compiling inside the GPU job
    reference: float = 0.0
    candidate: float = 0.0
    timing: float = 0.0
    other: float = 0.0
    dispatch: float = 0.0  # the worker's time on the job outside the judge's wall (judge start-up, storing)
    gpu_job: bool = True  # False: a compile_error the stage found; no GPU job
    verdict: str | None = None
    stage_compile: float = 0.0  # what compiling cost inside the stage (the job compiles as much without it)
    without_stage: FileTimes | None = None  # the same file judged with the stage off, where that was measured

    @property
    def job(self) -> float:
        """The judge's wall time of the GPU job: what the result counts as GPU-held (x W)."""
        return self.build + self.reference + self.candidate + self.timing + self.other if self.gpu_job else 0.0


@dataclasses.dataclass
class Layout:
    name: str
    workers: int
    gpus_per_job: int
    slots: int


@dataclasses.dataclass
class Outcome:
    wall_s: float
    gpu_held_s: float
    build_in_job_s: float
    stage_cpu_s: float
    jobs: int

    @property
    def compile_share(self) -> float | None:
        return self.build_in_job_s / self.gpu_held_s if self.gpu_held_s else None


# --- reading measurements ------------------------------------------------------------------------------------------


def judge_parts(document: dict) -> dict:
    """reference / candidate / timing seconds from a result document's ``phases_s.judge_parts``."""
    parts = (document.get("phases_s") or {}).get("judge_parts") or {}
    out = {"reference": 0.0, "candidate": 0.0, "timing": 0.0}
    for key, value in parts.items():
        value = float(value or 0.0)
        if key in ("reference_time", "candidate_time", "take_kept", "reference_kept", "candidate_kept"):
            out["timing"] += value
        elif key.startswith("reference") or key in ("read_outputs", "compare"):
            out["reference"] += value
        elif key.startswith("candidate"):
            out["candidate"] += value
    return out


def _stamp(value) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def from_document(
    name: str,
    document: dict,
    occupied: float | None = None,
    stage: dict | None = None,
    build_status: str | None = None,
    code: str | None = None,
) -> FileTimes:
    """A file's phases from its result document, the job's occupancy (finished - started) and its build report."""
    build = float((document.get("build") or {}).get("compile_s") or 0.0)
    parts = judge_parts(document)
    wall = float(document.get("wall_s") or 0.0)
    stage = stage or {}
    stage_compile = float((stage.get("build") or {}).get("compile_s") or 0.0)
    compiled = bool(stage) or build > 0 or (code is not None and has_compile_call(code))
    # No GPU job: the build stage found a compile_error (its document is the stage's, with no wall time).
    has_job = (
        bool(document)
        and bool(document.get("phases_s") or wall)
        and build_status != "compile_error"
        and not document.get("build_stage")
    )
    if not has_job:
        parts, build = {}, 0.0
    # A build inside the job happens in one of the parts (a lazy build in the candidate's first trial) or in the start
    # (one at import): counted once, as build, and taken out of the candidate's part where it overlaps the parts.
    overlap = max(0.0, build + sum(parts.values()) - wall) if has_job else 0.0
    if overlap:
        parts["candidate"] = max(0.0, parts["candidate"] - overlap)
    other = max(0.0, wall - build - sum(parts.values())) if has_job else 0.0
    dispatch = max(0.0, occupied - wall) if has_job and occupied is not None else 0.0
    return FileTimes(
        name=name,
        compiled=compiled,
        stage=float(stage.get("seconds") or 0.0),
        build=build,
        other=other,
        dispatch=dispatch,
        gpu_job=has_job,
        verdict=document.get("verdict"),
        stage_compile=stage_compile,
        **parts,
    )


def load_summary(path: Path) -> tuple[list[FileTimes], list[FileTimes], dict]:
    """A gpu_site_run summary's two passes as files (the dump beside it holds the documents): the stage pass's, the
    nobuild pass's, and the run's facts (measured wall, W, the gap between jobs, the build slots)."""
    summary = json.loads(path.read_text())
    passes = summary.get("passes") or {}
    facts = {
        "profile": summary.get("profile"),
        "world_size": (summary.get("profile_fields") or {}).get("world_size"),
        "build_slots": (summary.get("settings") or {}).get("build_workers"),
        "measured": {},
    }
    found: dict[str, list[FileTimes]] = {"stage": [], "nobuild": []}
    for name in found:
        info = passes.get(name)
        if not info:
            continue
        documents = _documents(path.parent / "dumps" / f"{name}.json")
        rows = info.get("rows") or []
        for row in rows:
            started, finished = _stamp(row.get("started_at")), _stamp(row.get("finished_at"))
            occupied = finished - started if started and finished else None
            stage = (
                {"seconds": row.get("stage_s"), "build": {"compile_s": row.get("stage_compile_s")}}
                if row.get("stage_s") is not None
                else None
            )
            doc = documents.get(row["job"]) or _document_of_row(row)
            found[name].append(from_document(row["file"], doc, occupied, stage, row.get("build_status")))
        totals = info.get("totals") or {}
        facts["measured"][name] = {
            "files": len(rows),
            "wall_s": totals.get("wall_s_created_to_last_finish"),
            "gpu_held_s": totals.get("gpu_held_s"),
            "compile_share": totals.get("compile_share_of_gpu_held"),
            "gap_s": _median_gap(rows),
        }
    return found["stage"], found["nobuild"], facts


def attach_without_stage(files: list[FileTimes], without: list[FileTimes]) -> None:
    """Each file measured again with the stage off (the nobuild pass, of this run or of another summary) keeps that
    measurement beside its own."""
    by_name = {f.name: f for f in without}
    for f in files:
        if f.name in by_name:
            f.without_stage = by_name[f.name]


def _documents(path: Path) -> dict:
    """The result documents by job id from gpu_site_run's dump of a pass (dumps/PASS.json beside the summary, in the
    run's folder and in its tarball); none where it is missing (the summary's rows then stand in)."""
    try:
        dump = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {job["job"]: (job.get("final") or {}).get("document") or {} for job in dump.get("jobs") or []}


def _document_of_row(row: dict) -> dict:
    """Without the dump: the summary row's own copies of the phases and the build report."""
    if row.get("verdict") is None and row.get("gpu_held_s") is None:
        return {}
    return {
        "verdict": row.get("verdict"),
        "wall_s": row.get("wall_s"),
        "phases_s": row.get("phases_s") or {},
        "build": {"compile_s": row.get("compile_in_job_s") or 0.0},
    }


def _median_gap(rows: list[dict]) -> float:
    """The median time between one job's end and the next one's start on the (single) measured worker, counting only
    jobs that were waiting: the claim and the message's way, not an idle worker."""
    spans = sorted(
        (_stamp(r.get("started_at")), _stamp(r.get("finished_at")))
        for r in rows
        if r.get("started_at") and r.get("finished_at")
    )
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False) if 0 <= b[0] - a[1] < 5.0]
    return round(statistics.median(gaps), 3) if gaps else 0.0


def load_documents(folder: Path) -> list[FileTimes]:
    """``pkb eval --json`` documents: no build stage was run (stage times unknown: the compile time stands in)."""
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and "verdict" in document:
            f = from_document(path.stem, document)
            f.stage = f.stage_compile = f.build  # no stage ran: its compile time stands in for it
            f.without_stage = f
            out.append(f)
    return out


# --- projecting other file sets ------------------------------------------------------------------------------------


def class_medians(files: list[FileTimes]) -> dict[bool, FileTimes]:
    """Per class (compiled or not): a file whose every phase is the measured median (of files with a GPU job)."""
    out = {}
    for compiled in (True, False):
        group = [f for f in files if f.compiled == compiled and f.gpu_job]
        if not group:
            continue
        median = {p: statistics.median(getattr(f, p) for f in group) for p in PHASES + ("dispatch", "stage_compile")}
        out[compiled] = FileTimes(name=f"median-{'compiled' if compiled else 'plain'}", compiled=compiled, **median)
        offs = [f.without_stage for f in group if f.without_stage is not None and f.without_stage.gpu_job]
        if offs:  # the class's jobs as measured with the stage off
            out[compiled].without_stage = FileTimes(
                name=f"median-{'compiled' if compiled else 'plain'}-without-stage",
                compiled=compiled,
                **{p: statistics.median(getattr(o, p) for o in offs) for p in PHASES + ("dispatch",)},
            )
    return out


def project_count(files: list[FileTimes], count: int) -> list[FileTimes]:
    """``count`` files with the measured share of compiled ones, each its class's medians (projected)."""
    medians = class_medians(files)
    share = sum(f.compiled for f in files) / len(files)
    compiled = round(count * share) if True in medians else 0
    compiled = compiled if False in medians else count
    return [dataclasses.replace(medians[i < compiled], name=f"file{i + 1}") for i in range(count)]


def project_kernels(files: list[FileTimes], folder: Path) -> list[FileTimes]:
    """The files of a directory: measured phases where a file was measured (same path), else its class's medians."""
    measured = {f.name: f for f in files}
    medians = class_medians(files)
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = str(path.relative_to(folder))
        if rel in measured:
            out.append(measured[rel])
            continue
        compiled = has_compile_call(path.read_text(errors="replace"))
        base = medians.get(compiled) or next(iter(medians.values()))
        out.append(dataclasses.replace(base, name=rel, compiled=compiled))
    return out


# --- the schedule ----------------------------------------------------------------------------------------------------


def parse_layout(text: str, default_slots: int) -> Layout:
    match = re.fullmatch(r"(\d+)xW(\d+)(?:@(\d+))?", text)
    if not match:
        raise argparse.ArgumentTypeError(f"layout {text!r}: NxWk[@S], e.g. 8xW1 or 1xW8@16")
    workers, k = int(match.group(1)), int(match.group(2))
    if workers < 1 or k < 1:
        raise argparse.ArgumentTypeError(f"layout {text!r}: at least one worker of one GPU")
    return Layout(text, workers, k, int(match.group(3)) if match.group(3) else default_slots)


def simulate(
    files: list[FileTimes], layout: Layout, stage_on: bool, gap_s: float = 0.0, job_scale: float = 1.0
) -> Outcome:
    """The submission's wall time on ``layout`` (see the module docstring for the model)."""
    ready: list[tuple[float, int]] = []
    slots = [0.0] * max(1, layout.slots)
    stage_cpu = 0.0
    jobs: list[FileTimes] = []
    for index, f in enumerate(files):
        if stage_on and f.compiled:
            start = heapq.heappop(slots)
            end = start + f.stage
            heapq.heappush(slots, end)
            stage_cpu += f.stage
            if f.gpu_job:
                ready.append((end, index))
        else:
            ready.append((0.0, index))
    workers = [0.0] * layout.workers
    wall = max(slots) if stage_on and any(f.compiled for f in files) else 0.0
    held = compiling = 0.0
    for at, index in sorted(ready):
        job, build, dispatch = files[index].job, files[index].build, files[index].dispatch
        if not stage_on:
            job, build, dispatch = without_stage(files[index])
        free = heapq.heappop(workers)
        start = max(free + (gap_s if free > 0 else 0.0), at)
        end = start + (job + dispatch) * job_scale
        heapq.heappush(workers, end)
        wall = max(wall, end)
        held += job * job_scale * layout.gpus_per_job
        compiling += build * job_scale * layout.gpus_per_job
        jobs.append(files[index])
    return Outcome(wall_s=wall, gpu_held_s=held, build_in_job_s=compiling, stage_cpu_s=stage_cpu, jobs=len(jobs))


def without_stage(f: FileTimes) -> tuple[float, float, float]:
    """(judge wall, compiling inside it, dispatch) of the file's job with the stage off: measured where the run had
    such a pass, else the stage's compile time added to the job (a compile_error the stage found: a job as long as
    its stage)."""
    if f.without_stage is not None:
        w = f.without_stage
        return w.job, w.build, w.dispatch
    if not f.gpu_job:
        return f.stage, f.stage_compile, 0.0
    extra = max(0.0, f.stage_compile - f.build) if f.compiled else 0.0
    return f.job + extra, f.build + extra, f.dispatch


# --- the table -------------------------------------------------------------------------------------------------------


def table(
    files: list[FileTimes], layouts: list[Layout], facts: dict, gap_s: float, scales: dict, source: str
) -> list[dict]:
    rows = []
    measured_w = facts.get("world_size")
    measured = facts.get("measured") or {}
    for layout in layouts:
        scale = scales.get(layout.gpus_per_job, 1.0)
        jobs_measured = measured_w in (None, layout.gpus_per_job)
        on = simulate(files, layout, True, gap_s, scale if not jobs_measured else 1.0)
        off = simulate(files, layout, False, gap_s, scale if not jobs_measured else 1.0)
        own = source == "measured files" and layout.workers == 1 and jobs_measured
        rows.append(
            {
                "layout": layout.name,
                "workers": layout.workers,
                "gpus_per_job": layout.gpus_per_job,
                "build_slots": layout.slots,
                "files": len(files),
                "jobs": on.jobs,
                "stage_on": {
                    "wall_s": round(on.wall_s, 1),
                    "gpu_held_s": round(on.gpu_held_s, 1),
                    "compile_share": _round(on.compile_share),
                    "stage_cpu_s": round(on.stage_cpu_s, 1),
                },
                "stage_off": {
                    "wall_s": round(off.wall_s, 1),
                    "gpu_held_s": round(off.gpu_held_s, 1),
                    "compile_share": _round(off.compile_share),
                },
                "measured": {"stage_on": measured.get("stage")} if own else None,
                "basis": (
                    "projected (schedule of measured per-file phases)"
                    if own or source == "measured files"
                    else f"projected ({source})"
                )
                + (
                    ""
                    if jobs_measured
                    else f"; jobs at W={layout.gpus_per_job} not measured: x{scale} the W={measured_w} times"
                ),
            }
        )
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def render(rows: list[dict]) -> str:
    head = (
        f"{'layout':<10} {'files':>5} {'on: wall s':>11} {'GPU-held s':>11} {'compile':>8} | "
        f"{'off: wall s':>11} {'GPU-held s':>11} {'compile':>8} | basis"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        on, off = r["stage_on"], r["stage_off"]
        name = f"{r['workers']}xW{r['gpus_per_job']}@{r['build_slots']}"
        lines.append(
            f"{name:<10} {r['files']:>5} {on['wall_s']:>11.1f} "
            f"{on['gpu_held_s']:>11.1f} {_pct(on['compile_share']):>8} | {off['wall_s']:>11.1f} "
            f"{off['gpu_held_s']:>11.1f} {_pct(off['compile_share']):>8} | {r['basis']}"
        )
        if r.get("measured") and r["measured"].get("stage_on"):
            m = r["measured"]["stage_on"]
            lines.append(
                f"{'':<10} {m.get('files') or 0:>5} {_num(m.get('wall_s')):>11} {_num(m.get('gpu_held_s')):>11} "
                f"{_pct(m.get('compile_share')):>8} |   (measured: the run itself, stage on)"
            )
    return "\n".join(lines)


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def phase_medians(files: list[FileTimes]) -> str:
    lines = []
    for compiled, f in class_medians(files).items():
        count = sum(1 for x in files if x.compiled == compiled and x.gpu_job)
        lines.append(
            f"median of {count} {'compiled' if compiled else 'plain'} files (measured): "
            + ", ".join(f"{p} {getattr(f, p):.1f}s" for p in PHASES)
            + f", job {f.job:.1f}s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "measured",
        nargs="+",
        type=Path,
        help="gpu_site_run summary.json files, or folders of pkb eval --json documents",
    )
    parser.add_argument("--kernels", type=Path, help="project this directory of kernels instead of the measured files")
    parser.add_argument("--files", type=int, help="project this many files (the measured share compiled)")
    parser.add_argument("--layout", action="append", default=[], help="NxWk[@S]: N workers of k GPUs, S build slots")
    parser.add_argument(
        "--build-slots", type=int, help="build slots of a layout without @S (default: the run's build workers, else 8)"
    )
    parser.add_argument("--gap", type=float, help="seconds between jobs on a worker (default: the measured median)")
    parser.add_argument(
        "--job-scale", action="append", default=[], help="k=F: jobs at W=k take F times the measured W's (default 1.0)"
    )
    parser.add_argument("--json", type=Path, help="write the table as JSON too")
    args = parser.parse_args(argv)

    files: list[FileTimes] = []
    without: list[FileTimes] = []
    facts: dict = {}
    for path in args.measured:  # summaries of one run or of two (the passes on two machines), or documents
        if path.is_dir():
            files += load_documents(path)
            continue
        stage_files, nobuild_files, more_facts = load_summary(path)
        files += stage_files
        without += nobuild_files
        if stage_files or not facts:
            facts = {**more_facts, "measured": {**(facts.get("measured") or {}), **more_facts["measured"]}}
    attach_without_stage(files, without)
    if not files:
        print("no measured files", file=sys.stderr)
        return 1
    source = "measured files"
    print(phase_medians(files))  # of the measured files, before any projection
    if args.kernels:
        files, source = project_kernels(files, args.kernels), f"{args.kernels}: class medians for unmeasured files"
    elif args.files:
        files, source = project_count(files, args.files), f"{args.files} files of the measured classes' medians"
    gap = args.gap if args.gap is not None else ((facts.get("measured") or {}).get("stage") or {}).get("gap_s", 0.0)
    scales = {}
    for item in args.job_scale:
        k, _, factor = item.partition("=")
        scales[int(k)] = float(factor)
    slots = args.build_slots or facts.get("build_slots") or 8
    layouts = [parse_layout(x, slots) for x in (args.layout or ["1xW1"])]
    rows = table(files, layouts, facts, gap or 0.0, scales, source)
    print(
        f"gap between jobs on a worker: {gap or 0.0:.2f}s; files: {len(files)} "
        f"({sum(f.compiled for f in files)} with a compile call)"
    )
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "facts": facts}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
