"""``pkb``: the judge's command line.

    pkb problems list [--json]
    pkb eval PROBLEM CANDIDATE|reference --world-size W --device cpu|cuda [--trials 5] [--seed S] [--json OUT]
             [--hidden-shape] [--hidden-world-size W2|auto] [--pairs K] [--shared-device]
    pkb selfcheck [--problems 1-29] --device cpu --world-size W [--json OUT] [--shared-device]
    pkb submit DIR --model ... --protocol ... --attempts k --profile ... [--wait] [--json]   (the site's upload client)
    pkb publish ID [--yes]                                                 (list a submission on the leaderboard)
    pkb withdraw ID [--yes]                                                (take it off the leaderboards again)
    pkb feedback open | PROBLEM FILE --session S | show S | link S SUBMISSION   (the agentic feedback loop)
    pkb sandbox-check [--json]     what a candidate sandbox on this host would be (the site's worker asks before jobs)
    pkb sweep DIR [--json]         kill what a killed judge left running under its temporary DIR (the site's worker)
    pkb prebuild PROBLEM CANDIDATE --target-device cuda [--arch 9.0] [--max-jobs N] [--nice N] [--json OUT]
                                   the build stage: the file's extensions built on CPU cores before its GPU job

``eval`` exits 0 whenever the evaluation ran, whatever the verdict; 2 for bad arguments. The host's commands
(sandbox-check, sweep, host) are evaluator/host_commands.py; the lines ``eval`` prints, evaluator/result_text.py.

Trials: ``eval`` runs ``--trials`` correctness trials (default 5), then one re-check trial after timing, so a result
lists 6. A site judges with its hardware profile's own count (cpu-gloo: 3, so 4 listed; GET /api/v1/profiles/ says
each one's); ``pkb submit`` prints the profile's count and the ``pkb eval`` line that reproduces it.

Output closed early (``pkb problems list | head``): the command stops quietly with status 141 (128 + SIGPIPE), as
other command-line tools do.

Hidden checks (docs/threat-model.md, "hard-coded W or shapes"; the site turns both on for ranked runs):
``--hidden-shape`` adds one more correctness trial at a shape (M', N') the judge draws after the timed loop (the
result's last trial carries ``hidden_shape``); ``--hidden-world-size W2`` adds a correctness-only run at world size W2
when the main run is correct (the result's ``hidden_world_size`` says what happened there). A failure at either is
the verdict. W2 must differ from W and be allowed by the problem's world-size rule, else exit 2; ``auto`` has the
judge draw W2 itself, from the OS's randomness, among the world sizes the problem allows and this host can run
(evaluator/judge/hidden_world.py), and run none where there is no other.

Shared-device worlds (``--device cuda --shared-device``, docs/site.md "Shared-device worlds"): every rank of both
groups on the first GPU of the judge's device set, gloo with CUDA tensors; correctness only (it implies
``--no-timing``; ``--pairs`` with it exits 2), and every result carries ``environment.shared_device`` and the
``shared_device`` flag (never ranked, never faster). ``--hidden-world-size`` runs shared too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from evaluator import host_commands  # the judge itself (torch) only for the commands that judge
from evaluator.contract import requests as contract
from evaluator.contract import schema
from evaluator.result_text import summary
from pkb_client import cli as client_cli


def _problems_list(args) -> int:
    import problems

    rows = [p.summary() for p in problems.registry().values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['id']:>3}  {row['stem']:<48} {row['category']:<32} {row['world_size_rule']}")
    for pid, error in sorted(problems.BROKEN.items()):
        print(f"{pid:>3}  BROKEN: {error}")
    print(f"{len(rows)} problems implemented of {len(problems.catalogue())} in the catalogue")
    return 0


def _eval(args) -> int:
    return run_eval(contract.JudgeRequest.from_namespace(args), pool=getattr(args, "pool", None))


def evaluate_options(request: contract.JudgeRequest) -> dict:
    """The request as judge.evaluate's keywords (its Config): everything but problem, candidate, W, device, output."""
    options = dict(
        trials=request.trials,
        seed=request.seed,
        M=request.M,
        N=request.N,
        dtype=request.dtype,
        reduced=request.reduced,
        timing=request.timing,
        multicast_allowed=request.multicast_allowed,
        timeout_s=request.timeout_s,
        seeds=list(request.seeds) if request.seeds else None,
        profile_dir=request.profile_dir,
        hidden_shape=request.hidden_shape,
        hidden_world_size=request.hidden_world_size,
        pairs=request.pairs,
    )
    if request.shared_device:
        options["shared_device"] = True
    if request.sandbox_required:
        options["sandbox_required"] = True
    return options


def run_eval(request: contract.JudgeRequest, pool=None) -> int:
    """Judge one request (``pkb eval``; evaluator.serve passes its WarmPool as ``pool``)."""
    from evaluator import judge
    from evaluator.judge import shared_device

    try:
        _check_hidden_world_size(request.problem, request.world_size, request.hidden_world_size)
        # A warm pool's groups were started for a world of one GPU per rank: a shared world starts its own.
        with shared_device.one_device(request.shared_device):
            result = judge.evaluate(
                request.problem,
                request.candidate,
                request.world_size,
                request.device,
                pool=None if request.shared_device else pool,
                **evaluate_options(request),
            )
    except judge.BadRequest as exc:
        print(f"pkb eval: {exc}", file=sys.stderr)
        return 2
    if request.json_out:
        _write_json(request.json_out, result)
    print(summary(result))
    print(
        f"trials: {request.trials} correctness + 1 re-check after timing (--trials {request.trials}; a site's "
        f"profile sets its own count, which pkb submit prints)"
    )
    if result.get("profile"):
        from evaluator.rank import trace_summary

        profile = result["profile"]
        print(trace_summary.render(profile["summary"]) if "summary" in profile else profile.get("error", ""))
        print(f"merged trace: {profile.get('trace', '(none)')}")
    return 0


def _prebuild(args) -> int:
    return run_prebuild(contract.PrebuildRequest.from_namespace(args))


DEFAULT_PREBUILD_TIMEOUT_S = 900.0


def run_prebuild(request: contract.PrebuildRequest) -> int:
    """The build stage of one file (evaluator/judge/prebuild.py): exits 0 whenever it ran, whatever its status
    (built, compile_error, nothing_built, unreached, infra_error); 2 for bad arguments. A compile_error's report
    carries the file's result document under ``result``."""
    # Before torch is imported here or in any rank (they inherit this environment): the stage never takes a GPU, and
    # builds for the GPU job's architecture, which a process without GPUs cannot read from a device.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if request.arch:
        os.environ["TORCH_CUDA_ARCH_LIST"] = request.arch
    if request.max_jobs:
        os.environ["MAX_JOBS"] = str(max(1, request.max_jobs))
    if request.nice > 0:
        os.nice(request.nice)  # its ranks and compilers yield to the judged jobs' ranks on the same cores
    if request.target_device not in contract.DEVICES:
        print(f"pkb prebuild: unknown --target-device {request.target_device!r}", file=sys.stderr)
        return 2
    if not os.path.isfile(request.candidate):
        print(f"pkb prebuild: candidate file not found: {request.candidate}", file=sys.stderr)
        return 2
    from evaluator import judge
    from evaluator.judge import prebuild

    try:
        problem = _problem(request.problem)
    except judge.BadRequest as exc:
        print(f"pkb prebuild: {exc}", file=sys.stderr)
        return 2
    report = prebuild.prebuild(
        problem.id,
        request.candidate,
        target_device=request.target_device,
        timeout_s=request.timeout_s or DEFAULT_PREBUILD_TIMEOUT_S,
        required=True if request.sandbox_required else None,
    )
    if report["status"] == schema.COMPILE_ERROR:
        report["result"] = prebuild.result_document(report)
        report.pop("logs", None)  # they are the result's
    if request.json_out:
        _write_json(request.json_out, report)
    print(
        f"{report['problem']}  {report['candidate']}  for {report['target_device']}: {report['status']} "
        f"({report.get('seconds', 0):.1f} s) {report.get('message', '')}"
    )
    return 0


def _check_hidden_world_size(problem, world_size: int, hidden: int | str | None) -> None:
    """``--hidden-world-size``: another world size that the problem's rule allows, or ``auto`` (the judge draws one).
    (The judge itself only records a disallowed one as skipped; on the command line it is a mistake, so it is refused
    before anything runs.)"""
    from evaluator import judge

    if hidden is None or hidden == contract.HIDDEN_WORLD_AUTO:
        return
    assert isinstance(hidden, int)  # the contract admits a number or auto
    if hidden < 1:
        raise judge.BadRequest(f"--hidden-world-size must be at least 1, not {hidden}")
    if hidden == world_size:
        raise judge.BadRequest(f"--hidden-world-size {hidden} is the world size of the run itself; pick another one")
    prob = _problem(problem)
    if not prob.allows_world_size(hidden):
        raise judge.BadRequest(
            f"hidden world size {hidden} is not allowed by {prob.stem} (rule: {prob.world_size_rule})"
        )


def _problem(problem):
    import problems
    from evaluator import judge

    try:
        return problems.get(problem)
    except problems.UnknownProblem as exc:
        raise judge.BadRequest(str(exc)) from exc


def _write_json(path: str, document) -> None:
    if path == "-":
        print(json.dumps(document, indent=2))
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(document, f, indent=2)


def _parse_ids(text: str | None) -> list[int]:
    import problems

    if not text:
        return list(problems.registry())
    ids: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            ids.extend(range(int(lo), int(hi) + 1))
        else:
            ids.append(int(part))
    return ids


def _selfcheck(args) -> int:
    from evaluator.judge import selfcheck
    from evaluator.judge.config import BadRequest

    try:
        ids = _parse_ids(args.problems)
    except ValueError:
        print(f"pkb selfcheck: bad --problems {args.problems!r} (use e.g. 1-29 or 1,2,13)", file=sys.stderr)
        return 2
    from evaluator.judge import shared_device

    shared = bool(args.shared_device)
    try:
        with shared_device.one_device(shared):  # correctness only: a shared world is never timed
            report = selfcheck.run(
                ids,
                args.world_size,
                args.device,
                M=args.M,
                N=args.N,
                reduced=args.reduced,
                trials=args.trials,
                nulls=not args.no_nulls,
                seed=args.seed,
                on_row=lambda row: print(selfcheck.render_row(row), flush=True),
                **(dict(timing=False, shared_device=True) if shared else {}),
            )
    except BadRequest as exc:
        print(f"pkb selfcheck: {exc}", file=sys.stderr)
        return 2
    if args.json_out:
        _write_json(args.json_out, report)
    bad = sum(not r["ok"] for r in report["rows"])
    print(
        f"selfcheck W={args.world_size} {args.device}{' shared-device' if shared else ''}: "
        f"{len(report['rows']) - bad} ok, {bad} bad"
    )
    return 0 if report["ok"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pkb", description="pkb-arena judge")
    parser.add_argument("--version", action="version", version=client_cli.version())
    sub = parser.add_subparsers(dest="command", required=True)

    plist = sub.add_parser("problems", help="list the problems", description="List the implemented problems.")
    plist.add_argument("action", choices=["list"], help="list: one line per problem (id, stem, category, W rule)")
    plist.add_argument("--json", action="store_true", help="print the list as JSON")
    plist.set_defaults(func=_problems_list)

    # eval's options are the judge request's (evaluator/contract/requests.py): the command line reads what a request
    # writes.
    pev = sub.add_parser("eval", help="judge one candidate on one problem")
    contract.add_arguments(pev)
    pev.set_defaults(func=_eval)

    psc = sub.add_parser("selfcheck", help="references against themselves, and null answers")
    contract.add_arguments(psc, contract.SHAPE_FIELDS)
    psc.add_argument("--problems", default=None, help="ids, e.g. 1-29 or 1,2,13 (default: all implemented)")
    psc.add_argument("--no-nulls", action="store_true", help="skip the null answers (no communication, zeros, ...)")
    psc.set_defaults(func=_selfcheck)

    pbox = sub.add_parser("sandbox-check", help="what a candidate sandbox on this host would be (one line, or JSON)")
    pbox.add_argument("--json", action="store_true", help="print host_support() as JSON")
    pbox.set_defaults(func=host_commands.sandbox_check)

    phost = sub.add_parser("host", help="this host's record for a worker's GPUs, and whether it serves a profile")
    phost.add_argument("--gpus", help="the worker's devices, e.g. 0-3 (default: all)")
    # Not --world-size: that option is the judge request's alone (evaluator/contract/requests.py); this one names a
    # profile's.
    phost.add_argument("--ranks", type=int, default=0, help="check a profile of this many ranks (its world size)")
    phost.add_argument("--gpu-model", help="the profile's GPU model, e.g. H200")
    phost.add_argument("--nvlink", action="store_true", help="the profile needs its GPUs linked by NVLink")
    phost.add_argument(
        "--shared-device",
        action="store_true",
        help="the profile runs every rank on one GPU (pkb eval --shared-device): one GPU serves it",
    )
    phost.add_argument("--json", action="store_true", help="print the record as JSON")
    phost.set_defaults(func=host_commands.host_record)

    # prebuild's options are its request's (evaluator/contract/requests.py, PrebuildRequest), as eval's are
    # JudgeRequest's.
    ppb = sub.add_parser("prebuild", help="the build stage: a file's extensions built on CPU cores before its GPU job")
    contract.add_arguments(ppb, request=contract.PrebuildRequest)
    ppb.set_defaults(func=_prebuild)

    psw = sub.add_parser("sweep", help="kill what a killed judge left running under its temporary directory")
    psw.add_argument("directory", help="the killed judge's temporary directory (a worker's job or workspace dir)")
    psw.add_argument("--json", action="store_true", help="print the counts as JSON")
    psw.add_argument("--remove", action="store_true", help="then remove DIR (any depth, modes, mounts)")
    psw.set_defaults(func=host_commands.sweep)

    # The site client's commands (pkb_client/cli.py): their own parsers read the rest of the line.
    for name, text in client_cli.COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


SITE_COMMANDS = tuple(client_cli.COMMANDS)
SIGPIPE_STATUS = 128 + 13


def main(argv: list[str] | None = None, pool=None) -> int:
    """``pool``: a WarmPool for ``eval`` (evaluator.serve passes its own; the command line never has one)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SITE_COMMANDS:  # the client alone: nothing of the judge (torch) is imported
            status = client_cli.run(argv[0], argv[1:])
        else:
            args = build_parser().parse_args(argv)
            args.pool = pool
            status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, while we can still handle it
        return status
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader went away (``| head``): stop without a traceback. Python's own recipe: point stdout at /dev/null
    so the interpreter's final flush has nowhere to fail. SIGPIPE itself stays ignored: the judge writes to its
    ranks' pipes and must see a dead rank as an error, not die of it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return SIGPIPE_STATUS


if __name__ == "__main__":
    sys.exit(main())
