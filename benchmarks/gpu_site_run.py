"""One whole submission through the site, as an operator runs it (issue 34): the embedded site (SQLite, the in-process
broker and worker), a profile opened, an upload of a directory of kernels through the API with the site client, the
worker judging them in the sandbox, and the pages and exports read back. Run by benchmarks/gpu_site_run.sh (which
installs the carried wheels and bubblewrap first); every setting comes from its environment (names below).

Two passes in one run, so that per-file GPU-held seconds with and without the build stage sit side by side:

- ``stage``: the whole submission (SUBMISSION_DIR) with the build stage on (PKB_BUILD_STAGE=STAGE_MODE);
- ``nobuild``: a second submitter uploads a subset (NOBUILD_FILES) with the build stage off, on a server started
  afresh with an empty build cache (HOME and PKB_BUILD_CACHE of its own), after the first pass has finished.

Steps are recorded in RUN_DIR/state.json as they finish; ``resume`` carries on from the last one (the server runs in
its own session, so it outlives a device call that hit its time limit), ``collect`` writes the summary of what is
there. Everything the lead needs lands in OUT as it goes: progress.log (each line also printed), summary.json
(rewritten after every step) and, at the end of each call, gpu_site_run.tar.gz (pages, exports, result documents,
server logs).

    python benchmarks/gpu_site_run.py all|resume|collect|stop
    python benchmarks/gpu_site_run.py check-submission [DIR]     (here: parse, signatures, the upload parser)

The summary's numbers: ``wall_s`` of a pass is from the upload's POST to the last job's finish (the job rows'
finished_at); per file ``gpu_held_s`` is the Result's gpu_seconds (judge wall x W: what the job held its GPUs for),
``compile_in_job_s`` the build report of the result document (what compiling cost inside that), and the build stage's
``stage_s`` / ``stage_compile_s`` from the job's build report (CPU cores, no GPU held). benchmarks/throughput.py
reads this file.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STARTED = time.monotonic()


def setting(name: str, default: str) -> str:
    return os.environ.get(name, default)


DRY = setting("DRY", "0") == "1"
PROFILE = setting("PROFILE", "cpu-gloo" if DRY else "gpu-h200x1")
RUN_DIR = Path(setting("RUN_DIR", str(REPO / "var" / "gpu_site_run")))
OUT = Path(setting("OUT", str(RUN_DIR / "out")))
PORT = int(setting("PORT", "8765"))
PYTHON = setting("PYTHON", sys.executable)
SUBMISSION_DIR = Path(setting("SUBMISSION_DIR", str(REPO / "benchmarks" / "gpu_submission")))
NOBUILD_FILES = [
    p
    for p in setting(
        "NOBUILD_FILES",
        "attempt_1/1_allreduce_cuda.py attempt_1/19_blocked_fp8_quantize_cuda.py attempt_6/1_allreduce_cuda.py",
    ).split()
    if p
]
PASSES = [p for p in setting("PASSES", "stage,nobuild").split(",") if p]
GPUS = setting("GPUS", "" if DRY else "0")
STAGE_MODE = setting("STAGE_MODE", "all" if DRY else "cuda")  # PKB_BUILD_STAGE of the first pass
SANDBOX = setting("PKB_SANDBOX", "required")
# A worker that cannot give candidates the whole sandbox refuses to start. With SANDBOX_FALLBACK=off the run then
# goes on without it (every result flagged unsandboxed, never ranked), said loudly in the log and the summary: a
# run on a lent GPU is rarely repeated, and its timings and build figures hold either way. Empty: stop there.
SANDBOX_FALLBACK = setting("SANDBOX_FALLBACK", "off")
WARM_SPARES = setting("WARM_SPARES", "0")
# The build stage's threads and its arch list (leaderboard/settings.py: PKB_BUILD_WORKERS, PKB_BUILD_ARCH); empty:
# the site's defaults (cores / 4 threads; the arch inherited by the stage and the jobs alike: the lent H200 sets
# TORCH_CUDA_ARCH_LIST=9.0a, where the site's first GPU run of the stage found the fingerprints differing).
BUILD_WORKERS = setting("BUILD_WORKERS", "")
BUILD_ARCH = setting("BUILD_ARCH", "")
DEADLINE_S = float(setting("DEADLINE_S", "540"))  # this call's budget: past it, save everything and say "resume"
PASS_TIMEOUT_S = float(setting("PASS_TIMEOUT_S", "1500"))  # a pass's own limit across calls
POLL_S = float(setting("POLL_S", "2"))
BASE = f"http://127.0.0.1:{PORT}"
STATE = RUN_DIR / "state.json"
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


# --- progress and state ---------------------------------------------------------------------------------------------


def log(message: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')} +{time.monotonic() - STARTED:6.1f}s] {message}"
    print(line, flush=True)
    try:
        OUT.mkdir(parents=True, exist_ok=True)
        with open(OUT / "progress.log", "a") as f:
            f.write(line + "\n")
    except OSError:
        pass


def load_state() -> dict:
    try:
        return json.loads(STATE.read_text())
    except (OSError, ValueError):
        return {"done": [], "passes": {}, "errors": []}


def save_state(state: dict) -> None:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, default=str))
    tmp.replace(STATE)


def failed(state: dict, step: str, exc: BaseException | str) -> None:
    """A step failed: logged and kept in the summary; what came before stays."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    log(f"FAILED {step}: {text}")
    state.setdefault("errors", []).append({"step": step, "error": text[:4000], "at": time.time()})
    save_state(state)


class OutOfTime(Exception):
    """This call's DEADLINE_S is spent: the state is saved and ``resume`` carries on."""


def time_left() -> float:
    return DEADLINE_S - (time.monotonic() - STARTED)


# --- the site's environment and commands ----------------------------------------------------------------------------


def site_env(pass_name: str) -> dict:
    """The environment of manage.py and the server for one pass: its own HOME and build cache (the nobuild pass
    starts with nothing built), the build stage on or off, the worker's GPUs, multicast off."""
    env = dict(os.environ)
    home = RUN_DIR / f"home-{pass_name}"
    home.mkdir(parents=True, exist_ok=True)
    (RUN_DIR / "data").mkdir(parents=True, exist_ok=True)
    env.update(MULTICAST_OFF)
    env.update(
        {
            # The run's own SQLite file (the default, sqlite:///var/..., is the checkout's own database).
            "DATABASE_URL": f"sqlite:///{RUN_DIR / 'data' / 'pkb-arena.sqlite3'}",
            "BROKER_URL": "stub://",
            "PKB_DATA_DIR": str(RUN_DIR / "data"),
            "PKB_DEFAULT_PROFILE": PROFILE,
            "PKB_SANDBOX": SANDBOX,
            "PKB_BUILD_STAGE": STAGE_MODE if pass_name == "stage" else "off",
            "PKB_BUILD_CACHE": str(RUN_DIR / f"build-cache-{pass_name}"),
            "HOME": str(home),
            "PKB_WARM_SPARES": WARM_SPARES,
            "PKB_GPUS": GPUS,
            "PKB_GPU_LOCK_DIR": str(RUN_DIR / "gpu-locks"),
            "PKB_WORK_DIR": str(RUN_DIR / f"work-{pass_name}"),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_DEBUG": "0",
        }
    )
    if BUILD_WORKERS:
        env["PKB_BUILD_WORKERS"] = BUILD_WORKERS
    if BUILD_ARCH:
        env["PKB_BUILD_ARCH"] = BUILD_ARCH
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p)
    return env


def manage(args: list[str], pass_name: str = "stage", timeout: float = 300) -> str:
    began = time.monotonic()
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=REPO, env=site_env(pass_name), capture_output=True, text=True, timeout=timeout
    )
    # The setup's JSON line holds the run's API tokens: never in the log.
    output = "\n".join(x for x in (done.stdout + done.stderr).strip().splitlines() if not x.startswith("SETUP "))
    log(
        f"manage.py {' '.join(args[:2])}: rc={done.returncode} in {time.monotonic() - began:.1f}s"
        + (f": {output.splitlines()[-1][:300]}" if output else "")
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({done.returncode}): {output[-3000:]}")
    return done.stdout


# The profile opened and two submitters with API tokens, through the site's own services (as the seed_demo command
# does); prints one JSON line. A profile the catalogue already defines (gpu-h200x1) keeps its definition.
SETUP_SHELL = r"""
import json
from django.contrib.auth import get_user_model
from leaderboard.accounts import services as accounts
from leaderboard.catalogue import services as catalogue
from leaderboard.catalogue.models import HardwareProfile
catalogue.profiles_ensure_defaults()
slug = %(profile)r
profile = HardwareProfile.objects.filter(slug=slug).first()
if profile is None:
    profile = HardwareProfile.objects.create(slug=slug, name="1x NVIDIA H200", device="cuda", world_size=1,
                                             ranked=True, trials=5, gpu_type="NVIDIA H200",
                                             description="one H200, W = 1 (created by benchmarks/gpu_site_run.py)")
profile.accepting = True
profile.save()
tokens = {}
for name in ("gpu-run", "gpu-run-nobuild"):
    user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_active": True})
    submitter = accounts.submitter_for(user)
    tokens[name] = accounts.token_create(submitter, "gpu_site_run", ["read", "submit"], days=2)[1]
fields = {f.name: getattr(profile, f.name) for f in profile._meta.fields}
print("SETUP " + json.dumps({"tokens": tokens, "profile": fields}, default=str))
"""


def step_setup(state: dict) -> None:
    manage(["migrate", "--noinput"], timeout=300)
    manage(["load_problems"], timeout=300)
    out = manage(["shell", "-c", SETUP_SHELL % {"profile": PROFILE}], timeout=120)
    line = next(x for x in out.splitlines() if x.startswith("SETUP "))
    setup = json.loads(line[len("SETUP ") :])
    state["tokens"] = setup["tokens"]
    state["profile"] = setup["profile"]
    log(
        f"profile {PROFILE}: W={setup['profile'].get('world_size')} device={setup['profile'].get('device')} "
        f"ranked={setup['profile'].get('ranked')} trials={setup['profile'].get('trials')} accepting=True"
    )


# --- the server -----------------------------------------------------------------------------------------------------


def server_start(state: dict, pass_name: str) -> None:
    """The pass's server; where the worker refused for want of the sandbox, once more without it (SANDBOX_FALLBACK)."""
    global SANDBOX
    if state.get("sandbox_fallback"):
        SANDBOX = "off"
    try:
        _server_start(state, pass_name)
    except RuntimeError as exc:
        if SANDBOX == "off" or SANDBOX_FALLBACK != "off" or "sandbox" not in str(exc).lower():
            raise
        failed(state, f"serve:{pass_name}", exc)
        log(
            "THE SANDBOX IS NOT AVAILABLE ON THIS HOST: starting the server with PKB_SANDBOX=off (every result "
            "flagged unsandboxed, never ranked; SANDBOX_FALLBACK= stops here instead)"
        )
        SANDBOX = "off"
        state["sandbox_fallback"] = True
        _server_start(state, pass_name)


def _server_start(state: dict, pass_name: str) -> None:
    """``runserver_with_worker`` in a session of its own (setsid: it outlives this call), then /healthz."""
    logfile = RUN_DIR / f"server-{pass_name}.log"
    env = site_env(pass_name)
    command = [PYTHON, "manage.py", "runserver_with_worker", f"127.0.0.1:{PORT}", "--noreload"]
    with open(logfile, "ab") as f:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    state.setdefault("servers", {})[pass_name] = {
        "pid": process.pid,
        "log": str(logfile),
        "build_stage": env["PKB_BUILD_STAGE"],
        "gpus": GPUS,
        "home": env["HOME"],
        "build_cache": env["PKB_BUILD_CACHE"],
    }
    save_state(state)
    log(
        f"server ({pass_name}): pid {process.pid}, PKB_BUILD_STAGE={env['PKB_BUILD_STAGE']}, PKB_GPUS={GPUS or '-'}, "
        f"build cache {env['PKB_BUILD_CACHE']}, log {logfile}"
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}): {tail(logfile)}")
        status, _ = http("GET", "/healthz", timeout=5)
        if status == 200:
            log(f"server ({pass_name}) answers /healthz")
            return
        time.sleep(1)
    raise RuntimeError(f"no /healthz answer in 240 s: {tail(logfile)}")


def server_stop(state: dict, pass_name: str) -> None:
    """SIGTERM to the server's own process group (the one this script started), then SIGKILL."""
    pid = (state.get("servers") or {}).get(pass_name, {}).get("pid")
    if not pid:
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.waitpid(pid, os.WNOHANG)  # reap it if it is this process's child (else a zombie stays in the group)
        except ChildProcessError:
            pass
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    log(f"server ({pass_name}) stopped")


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def http(method: str, path: str, token: str = "", timeout: float = 60) -> tuple[int, bytes]:
    headers = {"Accept": "*/*"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(BASE + path, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc).encode()


# --- the passes -----------------------------------------------------------------------------------------------------

REUSED = "reused.json"  # {"attempt_N/<file>": "<path in the repository>"}: kernels the tree keeps once, elsewhere


def assembled(source: Path) -> Path:
    """The folder to upload: ``source`` with the files its reused.json names copied in from where the repository
    keeps them (benchmarks/candidates, the compatibility set), so each kernel has one copy in the tree."""
    manifest = source / REUSED
    if not manifest.exists():
        return source
    target = RUN_DIR / "submission"
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(REUSED))
    for rel, origin in json.loads(manifest.read_text()).items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / origin, path)
    return target


def pass_dir(pass_name: str) -> Path:
    """The folder a pass uploads: the whole submission, or the subset of the nobuild pass (same paths)."""
    whole = assembled(SUBMISSION_DIR)
    if pass_name == "stage":
        return whole
    subset = RUN_DIR / "nobuild_submission"
    shutil.rmtree(subset, ignore_errors=True)
    for rel in NOBUILD_FILES:
        target = subset / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(whole / rel, target)
    return subset


def step_submit(state: dict, pass_name: str) -> None:
    folder = pass_dir(pass_name)
    attempts = max([1] + [int(p.parent.name.split("_")[1]) for p in folder.glob("attempt_*/*.py")])
    token = state["tokens"]["gpu-run" if pass_name == "stage" else "gpu-run-nobuild"]
    command = [
        PYTHON,
        "-m",
        "pkb_client.cli",
        "submit",
        str(folder),
        "--json",
        "--publish",
        "--url",
        BASE,
        "--token",
        token,
        "--profile",
        PROFILE,
        "--protocol",
        "best_of_k",
        "--attempts",
        str(attempts),
        "--backend",
        "mixed",
        "--model",
        f"gpu_site_run {pass_name} ({'build stage ' + STAGE_MODE if pass_name == 'stage' else 'no build stage'})",
    ]
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.py"))
    log(f"submit ({pass_name}): {len(files)} files from {folder}")
    began_wall = time.time()
    began = time.monotonic()
    done = subprocess.run(
        command, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=300
    )
    upload_s = time.monotonic() - began
    try:
        body = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(
            f"pkb submit printed no JSON (rc {done.returncode}): {done.stdout[-1500:]} {done.stderr[-1500:]}"
        ) from None
    if not body.get("accepted"):
        raise RuntimeError(f"upload refused: {json.dumps(body)[:3000]}")
    sub = body["submission"]
    state["passes"][pass_name] = {
        "submission": sub["id"],
        "url": sub.get("url"),
        "jobs": sub.get("jobs"),
        "files": files,
        "submitted_at": began_wall,
        "upload_s": round(upload_s, 3),
        "finished": False,
    }
    log(
        f"submit ({pass_name}): accepted as #{sub['id']} with {sub.get('jobs')} job(s) in {upload_s:.1f}s "
        f"(HTTP POST of the zipped folder)"
    )


def step_wait(state: dict, pass_name: str) -> None:
    """Poll the submission's status until every job finished, printing each verdict as it lands."""
    info = state["passes"][pass_name]
    token = state["tokens"]["gpu-run" if pass_name == "stage" else "gpu-run-nobuild"]
    seen = set(info.get("seen") or [])
    last_counts = silent_since = None
    while True:
        if time.time() - info["submitted_at"] > PASS_TIMEOUT_S:
            raise RuntimeError(f"pass {pass_name} not finished after {PASS_TIMEOUT_S:.0f} s")
        if time_left() < 25:
            info["seen"] = sorted(seen)
            save_state(state)
            raise OutOfTime(pass_name)
        status, raw = http("GET", f"/api/v1/submissions/{info['submission']}/status/", token, timeout=30)
        if status != 200:
            log(f"status check answered {status}: {raw[:200]!r}")
            silent_since = silent_since or time.monotonic()
            if time.monotonic() - silent_since > 60:  # the server is gone (a fresh machine, a crash): say so
                raise RuntimeError(f"the site has not answered for 60 s: {tail(RUN_DIR / f'server-{pass_name}.log')}")
            time.sleep(POLL_S)
            continue
        silent_since = None
        body = json.loads(raw)
        counts = body["jobs"]
        if counts != last_counts:
            log(
                f"  {pass_name}: queued {counts['queued']}, running {counts['running']}, done {counts['done']}, "
                f"failed {counts['failed']}  ({time.time() - info['submitted_at']:.0f} s since the upload)"
            )
            last_counts = counts
        for file in body.get("files") or []:
            if file["status"] in ("done", "failed") and file["job"] not in seen:
                seen.add(file["job"])
                speed = f" speedup {file['speedup']:.3f}" if file.get("speedup") is not None else ""
                log(
                    f"    {file.get('verdict') or file['status']:<15} {file['file']}{speed}"
                    f"{' (faster)' if file.get('faster') else ''}"
                )
        if body["finished"]:
            info.update(finished=True, finished_seen_at=time.time(), seen=sorted(seen), entry=body.get("entry"))
            log(f"pass {pass_name} finished: {counts}; entry {body.get('entry')}")
            return
        time.sleep(POLL_S)


# --- reading back: the database, the pages and the exports ---------------------------------------------------------


def step_dump(state: dict, pass_name: str) -> None:
    """The jobs and results of the pass's submission, read from the database by a Django process (``_dump``)."""
    info = state["passes"][pass_name]
    done = subprocess.run(
        [PYTHON, str(Path(__file__).resolve()), "_dump", str(info["submission"])],
        cwd=REPO,
        env=site_env(pass_name),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"dump failed: {done.stderr[-2000:]}")
    dump = json.loads(done.stdout)
    path = RUN_DIR / "dumps" / f"{pass_name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dump, indent=1, default=str))
    info["dump"] = str(path)
    info["rows"] = [row_of(job) for job in dump["jobs"]]
    info["totals"] = totals(info["rows"], dump)
    log(f"pass {pass_name}: {len(info['rows'])} jobs read back; totals {json.dumps(info['totals'])}")


def dump_submission(submission_id: int) -> dict:
    """Inside a Django process: every job of the submission with its build state and its final result document."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    django.setup()
    from leaderboard.jobs.models import EvaluationJob
    from leaderboard.submissions.models import Submission

    submission = Submission.objects.get(pk=submission_id)
    jobs = []
    for job in EvaluationJob.objects.filter(submission=submission).select_related("candidate").order_by("id"):
        results = list(job.results.order_by("id"))
        final = next((r for r in reversed(results) if r.is_final), None)
        jobs.append(
            {
                "job": job.pk,
                "file": job.candidate.filename,
                "problem": job.candidate.problem_id,
                "attempt": job.candidate.attempt,
                "backend": getattr(job.candidate, "backend", ""),
                "status": job.status,
                "attempts": job.attempts,
                "build_status": getattr(job, "build_status", None),
                "build_report": getattr(job, "build_report", None),
                "enqueued_at": job.enqueued_at,
                "started_at": job.started_at,
                "finished_at": job.finished_at,
                "results": [
                    {
                        "id": r.pk,
                        "verdict": r.verdict,
                        "gpu_seconds": r.gpu_seconds,
                        "wall_s": r.wall_s,
                        "created_at": r.created_at,
                    }
                    for r in results
                ],
                "final": None
                if final is None
                else {
                    "id": final.pk,
                    "verdict": final.verdict,
                    "message": final.message[:600],
                    "flags": final.flags,
                    "speedup": final.speedup,
                    "speedup_lo": final.speedup_lo,
                    "speedup_hi": final.speedup_hi,
                    "faster": final.faster,
                    "reference_ms": final.reference_ms,
                    "candidate_ms": final.candidate_ms,
                    "wall_s": final.wall_s,
                    "gpu_seconds": final.gpu_seconds,
                    "created_at": final.created_at,
                    "document": final.document,
                },
            }
        )
    return {"submission": submission.pk, "created_at": submission.created_at, "jobs": jobs}


def row_of(job: dict) -> dict:
    """One file's line of the summary (what the issue asks per file, and the phases throughput.py reads)."""
    final = job.get("final") or {}
    doc = final.get("document") or {}
    # A compile_error the build stage found is stored as the file's result with the stage's build report: no GPU job
    # ran, so nothing of it was compiled while holding a GPU.
    gpu_job = bool(doc) and not doc.get("build_stage")
    build = (doc.get("build") or {}) if gpu_job else {}
    stage = job.get("build_report") or {}
    phases = doc.get("phases_s") or {}
    return {
        "file": job["file"],
        "problem": job["problem"],
        "attempt": job["attempt"],
        "job": job["job"],
        "status": job["status"],
        "verdict": final.get("verdict"),
        "message": (final.get("message") or "")[:300],
        "flags": final.get("flags") or [],
        "build_status": job.get("build_status"),
        "stage_s": stage.get("seconds"),
        "stage_compile_s": (stage.get("build") or {}).get("compile_s"),
        "gpu_held_s": final.get("gpu_seconds"),
        "wall_s": final.get("wall_s"),
        "gpu_job": gpu_job,
        "compile_in_job_s": build.get("compile_s", 0.0) if gpu_job else None,
        "compiled_in_job": build.get("compiled"),
        "from_cache": build.get("from_cache"),
        "phases_s": phases,
        "speedup": final.get("speedup"),
        "faster": final.get("faster"),
        "reference_ms": final.get("reference_ms"),
        "candidate_ms": final.get("candidate_ms"),
        "infra_retries": sum(1 for r in job.get("results") or [] if r["verdict"] == "infra_error"),
        "enqueued_at": job.get("enqueued_at"),
        "started_at": job.get("started_at"),
        "finished_at": job.get("finished_at"),
    }


def totals(rows: list[dict], dump: dict) -> dict:
    from datetime import datetime

    def stamp(value):
        return datetime.fromisoformat(str(value)).timestamp() if value else None

    held = sum(r["gpu_held_s"] or 0.0 for r in rows)
    compiling = sum(r["compile_in_job_s"] or 0.0 for r in rows)
    # In the same unit as GPU-held (device-seconds: the judge's wall x W): each job's compiling x its W.
    compiling_held = sum(
        (r["compile_in_job_s"] or 0.0) * (r["gpu_held_s"] or 0.0) / r["wall_s"] for r in rows if r.get("wall_s")
    )
    finished = [stamp(r["finished_at"]) for r in rows if r["finished_at"]]
    created = stamp(dump.get("created_at"))
    verdicts: dict = {}
    for r in rows:
        verdicts[r["verdict"] or r["status"]] = verdicts.get(r["verdict"] or r["status"], 0) + 1
    return {
        "files": len(rows),
        "verdicts": verdicts,
        "gpu_held_s": round(held, 2),
        "compile_in_job_s": round(compiling, 2),
        "compile_share_of_gpu_held": round(compiling_held / held, 4) if held else None,
        "stage_s_sum": round(sum(r["stage_s"] or 0.0 for r in rows), 2),
        "wall_s_created_to_last_finish": round(max(finished) - created, 2) if finished and created else None,
    }


PAGES = [  # (name, path, who): what a visitor and an operator read back; {sid}, {slug} filled in
    ("leaderboard", "/leaderboard/{slug}/", ""),
    ("leaderboard_csv", "/leaderboard/{slug}/?format=csv", ""),
    ("leaderboard_json", "/leaderboard/{slug}/?format=json", ""),
    ("problems", "/problems/", ""),
    ("problems.json", "/problems/?format=json", ""),
    ("submission", "/submissions/{sid}/", ""),
    ("submission.csv", "/submissions/{sid}/?format=csv", ""),
    ("submission.json", "/submissions/{sid}/?format=json", ""),
    ("api-leaderboard", "/api/v1/leaderboard/{slug}/", ""),
    ("api-submission", "/api/v1/submissions/{sid}/", "token"),
    ("api-status", "/api/v1/submissions/{sid}/status/", "token"),
    ("home", "/", ""),
]


def step_pages(state: dict, pass_name: str) -> None:
    info = state["passes"][pass_name]
    sid = info["submission"]
    token = state["tokens"]["gpu-run" if pass_name == "stage" else "gpu-run-nobuild"]
    folder = RUN_DIR / "pages" / pass_name
    folder.mkdir(parents=True, exist_ok=True)
    fetched = []
    problems = sorted({row["problem"] for row in info.get("rows") or []})
    pages = (
        list(PAGES)
        + [(f"problem-{p}", f"/problems/{p}/", "") for p in problems]
        + [(f"problem-{p}.json", f"/problems/{p}/?format=json", "") for p in problems]
        + [
            (f"result-{row['job']}.json", f"/results/{r}.json", "")
            for row in info.get("rows") or []
            for r in [_final_result_id(info, row["job"])]
            if r
        ]
    )
    for name, path, who in pages:
        path = path.format(sid=sid, slug=PROFILE)
        began = time.monotonic()
        status, body = http("GET", path, token if who else "", timeout=60)
        seconds = time.monotonic() - began
        (folder / name.replace("/", "_")).write_bytes(body)
        mentions = str(sid).encode() in body if name.startswith(("leaderboard", "submission", "api-")) else None
        fetched.append(
            {
                "name": name,
                "path": path,
                "status": status,
                "bytes": len(body),
                "seconds": round(seconds, 3),
                "mentions_submission": mentions,
            }
        )
    info["pages"] = fetched
    bad = [p for p in fetched if p["status"] != 200]
    log(
        f"pages ({pass_name}): {len(fetched)} fetched, {len(bad)} not 200"
        + (": " + ", ".join(f"{p['name']}={p['status']}" for p in bad[:10]) if bad else "")
    )


def _final_result_id(info: dict, job_id: int):
    try:
        dump = json.loads(Path(info["dump"]).read_text())
    except (KeyError, OSError, ValueError):
        return None
    for job in dump["jobs"]:
        if job["job"] == job_id and job.get("final"):
            return job["final"]["id"]
    return None


# --- the summary ----------------------------------------------------------------------------------------------------


def summary(state: dict) -> dict:
    passes = state.get("passes") or {}
    side = []
    stage_rows = {r["file"]: r for r in (passes.get("stage") or {}).get("rows") or []}
    for row in (passes.get("nobuild") or {}).get("rows") or []:
        with_stage = stage_rows.get(row["file"]) or {}
        side.append(
            {
                "file": row["file"],
                "with_stage": {
                    k: with_stage.get(k)
                    for k in ("verdict", "build_status", "stage_s", "gpu_held_s", "compile_in_job_s")
                },
                "without_stage": {k: row.get(k) for k in ("verdict", "gpu_held_s", "compile_in_job_s")},
            }
        )
    out = {
        "schema": "gpu_site_run/1",
        "dry": DRY,
        "profile": PROFILE,
        "profile_fields": state.get("profile"),
        "settings": {
            "gpus": GPUS,
            "stage_mode": STAGE_MODE,
            "warm_spares": WARM_SPARES,
            "sandbox": "off (fallback: the host could not give the whole sandbox)"
            if state.get("sandbox_fallback")
            else SANDBOX,
            "build_workers": int(BUILD_WORKERS or max(1, (os.cpu_count() or 1) // 4)),
            "build_arch": BUILD_ARCH,
            "cpus": os.cpu_count(),
            "nobuild_files": NOBUILD_FILES,
            "passes": PASSES,
            "submission_dir": str(SUBMISSION_DIR),
        },
        "host": state.get("host"),
        "steps_done": state.get("done"),
        "errors": state.get("errors"),
        "passes": {},
        "side_by_side": side,
    }
    for name, info in passes.items():
        entry = {k: v for k, v in info.items() if k not in ("seen", "dump")}
        if info.get("submitted_at") and info.get("finished_seen_at"):
            entry["wall_s_polled"] = round(info["finished_seen_at"] - info["submitted_at"], 1)
        out["passes"][name] = entry
    return out


def write_summary(state: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = json.dumps(summary(state), indent=1, default=str)
    (OUT / "summary.json").write_text(data)
    (RUN_DIR / "summary.json").write_text(data)


def write_tarball() -> None:
    """pages, exports, dumps (result documents), server logs and the state in one file under OUT."""
    target = OUT / "gpu_site_run.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        # Not state.json: it holds the run's API tokens (summary.json has everything else it says).
        for name in ("pages", "dumps", "summary.json", "server-stage.log", "server-nobuild.log", "host.json"):
            path = RUN_DIR / name
            if path.exists():
                tar.add(path, arcname=f"gpu_site_run/{name}")
    log(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")


def step_host(state: dict) -> None:
    """What the run ran on (nvidia-smi, versions, the sandbox's support), for the summary."""
    record = {"python": sys.version.split()[0], "executable": PYTHON}
    commands = {
        "nvidia_smi": ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
        "versions": [
            PYTHON,
            "-c",
            "import torch, sys; print(torch.__version__, torch.version.cuda, "
            "torch.cuda.device_count()); import importlib.util as u; "
            "print('triton', __import__('triton').__version__ if u.find_spec('triton') "
            "else None); import django; print('django', django.__version__)",
        ],
        "sandbox": [
            PYTHON,
            "-c",
            "import json; from evaluator.process import sandbox; print(json.dumps(sandbox.host_support()))",
        ],
        "cpus": ["nproc"],
    }
    for name, command in commands.items():
        try:
            done = subprocess.run(command, cwd=REPO, env=site_env("stage"), capture_output=True, text=True, timeout=120)
            record[name] = (done.stdout + done.stderr).strip()[-2000:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            record[name] = f"unavailable: {exc}"
    state["host"] = record
    (RUN_DIR / "host.json").write_text(json.dumps(record, indent=1))
    for name in ("nvidia_smi", "versions", "cpus"):
        log(
            f"host {name}: {record[name].splitlines()[0] if record[name] else '-'}"
            + (f" (+{len(record[name].splitlines()) - 1} lines)" if record[name].count("\n") else "")
        )


# --- the plan --------------------------------------------------------------------------------------------------------


def plan() -> list[tuple[str, callable]]:
    steps = [("host", step_host), ("setup", step_setup)]
    for name in PASSES:
        steps += [
            (f"serve:{name}", lambda s, n=name: server_start(s, n)),
            (f"submit:{name}", lambda s, n=name: step_submit(s, n)),
            (f"wait:{name}", lambda s, n=name: step_wait(s, n)),
            (f"dump:{name}", lambda s, n=name: step_dump(s, n)),
            (f"pages:{name}", lambda s, n=name: step_pages(s, n)),
            (f"stop:{name}", lambda s, n=name: server_stop(s, n)),
        ]
    return steps


# A step whose failure leaves nothing for the later ones: the run stops there (a failed page fetch does not).
CRITICAL = ("setup", "serve:", "submit:")


def run(state: dict) -> int:
    for name, step in plan():
        if name in state["done"]:
            continue
        if time_left() < 30 and not name.startswith("stop:"):
            log(f"out of this call's time before {name}: run 'bash benchmarks/gpu_site_run.sh resume' next")
            return 3
        log(f"step {name}")
        try:
            step(state)
        except OutOfTime:
            log(
                f"out of this call's time in {name} (server still running in its own session): run "
                f"'bash benchmarks/gpu_site_run.sh resume' within the machine's warm window"
            )
            write_summary(state)
            return 3
        except Exception as exc:  # noqa: BLE001 - every failure logged, what came before kept
            failed(state, name, exc)
            write_summary(state)
            if name.startswith(CRITICAL):
                pass_name = name.split(":", 1)[1] if ":" in name else None
                if pass_name:  # this pass cannot go on: stop its server, let the next pass try
                    server_stop(state, pass_name)
                    state["done"] += [s for s, _ in plan() if s.endswith(":" + pass_name)]
                    save_state(state)
                    continue
                return 1
        state["done"].append(name)
        save_state(state)
        write_summary(state)
    log("all steps done")
    return 0


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "all"
    if command == "_dump":
        print(json.dumps(dump_submission(int(argv[1])), default=str))
        return 0
    if command == "check-submission":
        return check_submission(assembled(Path(argv[1]) if len(argv) > 1 else SUBMISSION_DIR))
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    state = load_state()
    if command == "all" and state.get("done"):
        log(f"{RUN_DIR} holds an earlier run (steps {state['done']}): 'resume' carries it on; FRESH=1 starts over")
        return 2
    if command == "resume" and not state.get("done"):
        log(
            f"nothing to resume in {RUN_DIR} (a fresh machine: the last one was given back); run 'all' again, with "
            f"PASSES=nobuild for the second pass alone (throughput.py takes both summaries)"
        )
        return 2
    if command == "stop":
        for name in list(state.get("servers") or {}):
            server_stop(state, name)
        return 0
    rc = 0
    if command in ("all", "resume"):
        log(
            f"gpu_site_run {command}: profile {PROFILE}, passes {PASSES}, dry={DRY}, run dir {RUN_DIR}, "
            f"deadline {DEADLINE_S:.0f} s"
        )
        save_state(state)
        rc = run(state)
    write_summary(state)
    try:
        write_tarball()
    except OSError as exc:
        log(f"tarball failed: {exc}")
    s = summary(state)
    for name, info in s["passes"].items():
        log(
            f"summary {name}: submission #{info.get('submission')}, finished {info.get('finished')}, "
            f"polled wall {info.get('wall_s_polled')} s, totals {json.dumps(info.get('totals'))}"
        )
    for row in s["side_by_side"]:
        log(f"side by side {row['file']}: with stage {row['with_stage']} | without {row['without_stage']}")
    return rc


# --- the check that runs here, before any device time ---------------------------------------------------------------


def check_submission(folder: Path) -> int:
    """Every file parses, defines ``solution`` with its problem's parameters (names, in order, as the reference's),
    and the site's upload parser accepts the folder as one submission (names, layout, metadata)."""
    import inspect

    sys.path[:0] = [str(REPO)]
    import problems
    from leaderboard.submissions.uploads import layout
    from leaderboard.submissions.uploads.types import Limits, UploadRejected

    catalogue = json.loads((REPO / "problems" / "catalogue.json").read_text())
    stems = {entry["stem"]: entry["id"] for entry in catalogue}
    bad = 0
    members = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = str(path.relative_to(folder))
        members.append((rel, path.read_bytes()))
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(), rel)
        mine = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"), None)
        problem_id = int(path.name.split("_", 1)[0])
        reference = inspect.signature(problems.get(problem_id).solution)
        want = list(reference.parameters)
        got = [a.arg for a in mine.args.args] if mine else None
        ok = got == want
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {rel}: solution{tuple(got or ())} vs reference{tuple(want)}")
    try:
        parsed = layout.parse(
            members, stems, Limits(max_files=1000, max_file_bytes=512 * 1024, max_total_bytes=16 * 2**20)
        )
        print(
            f"upload parser: {len(parsed.files)} files, backends {sorted(parsed.backends)}, attempts "
            f"{sorted({f.attempt for f in parsed.files})}, metadata {sorted(parsed.metadata)}, ignored {parsed.ignored}"
        )
    except UploadRejected as exc:
        bad += 1
        print(f"BAD upload parser refused it: {exc}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
