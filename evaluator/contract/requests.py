"""The requests between the site and the judge: what ``pkb eval`` (and the build stage's ``pkb prebuild``) is asked to
do, as types.

    request = JudgeRequest("1_allreduce", "/tmp/job1/c.py", world_size=8, device="cuda", trials=5,
                           json_out="/tmp/job1/result.json", sandbox_required=True, hidden_shape=True)
    request.command()                     # [python, "-m", "evaluator.cli", "eval", "1_allreduce", ...]: a subprocess's
    JudgeRequest.from_argv(request.argv())  == request                         # the warm judge's (evaluator/serve.py)

Every caller builds a :class:`JudgeRequest` (the site's job runner, the feedback runner, the warm judge) and
:meth:`JudgeRequest.argv` is the only place its command line is written; :meth:`JudgeRequest.from_argv` (and the
command line itself, evaluator/cli.py, whose ``eval`` parser is :func:`add_arguments`) the only place it is read.
:class:`PrebuildRequest` is the same for the build stage (evaluator/judge/prebuild.py), which the site's build worker
(leaderboard/jobs/build_stage.py) runs before a file's GPU job.
Standard library only (tests/test_layers.py): the site loads it through evaluator/contract/schema.py, without torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

# The judge's command line as a worker starts it (its own interpreter: the site's environment has the judge installed).
JUDGE = (sys.executable, "-m", "evaluator.cli")
EVAL = "eval"
PREBUILD = "prebuild"
DEVICES = ("cpu", "cuda")
DTYPES = ("bfloat16", "float16", "float32")
R = TypeVar("R", bound="_Request")
# ``--hidden-world-size auto``: the judge draws the hidden world size itself (evaluator/judge/hidden_world.py).
HIDDEN_WORLD_AUTO = "auto"


def _option(
    flag: str, help: str, *, kind: str = "value", type: Callable[[str], Any] = str, always: bool = False, **extra: Any
) -> dict[str, Any]:
    """How one field is spelled on the command line. kind: positional | value (``--flag V``) | flag (store_true) |
    negated (``--no-x`` sets the field False) | ints (comma-separated integers). ``always``: written even when it is
    the default (the lines a reader of a job's log expects to see)."""
    return {"flag": flag, "help": help, "kind": kind, "type": type, "always": always, "extra": extra}


@dataclass(frozen=True)
class _Request:
    """What the judge's requests share: their fields say how each is spelled (:func:`_option`), so one writer
    (:meth:`argv`) and one reader (:meth:`from_argv`, :func:`add_arguments`) serve every command. ``COMMAND``: the
    subcommand of evaluator/cli.py that reads it."""

    COMMAND: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for name in ("problem", "candidate"):
            value = getattr(self, name)
            if not isinstance(value, str) or value.startswith("-"):
                raise ValueError(f"{type(self).__name__}.{name} must be a string not starting with '-', not {value!r}")

    # --- the one writer and the one reader of the command line -------------------------------------------------------

    def argv(self) -> list[str]:
        """The command line (without the interpreter): ``[COMMAND, PROBLEM, CANDIDATE, --option, value, ...]``."""
        out = [self.COMMAND]
        for f in dataclasses.fields(self):
            spec, value = f.metadata, getattr(self, f.name)
            kind = spec["kind"]
            if kind == "positional":
                out.append(str(value))
            elif kind == "flag":
                out += [spec["flag"]] if value else []
            elif kind == "negated":
                out += [] if value else [spec["flag"]]
            elif value is not None and (spec["always"] or value != f.default):
                text = ",".join(str(s) for s in value) if kind == "ints" else str(value)
                # A value that begins with '-' would read as an option: it goes in the same word.
                out += [f"{spec['flag']}={text}"] if text.startswith("-") else [spec["flag"], text]
        return out

    def command(self) -> list[str]:
        """The subprocess a worker starts: this interpreter running the judge's command line with :meth:`argv`."""
        return [*JUDGE, *self.argv()]

    @classmethod
    def from_argv(cls: type[R], argv: list[str]) -> R:
        """The request a command line says (argparse's exit 2, with its message, for a bad one)."""
        argv = list(argv)
        if argv[:1] != [cls.COMMAND]:
            raise SystemExit(f"evaluator.cli: only {cls.COMMAND} commands are {cls.__name__}s, not {argv[:1]}")
        parser = argparse.ArgumentParser(prog=f"pkb {cls.COMMAND}")
        add_arguments(parser, request=cls)
        return cls.from_namespace(parser.parse_args(argv[1:]))

    @classmethod
    def from_namespace(cls: type[R], args: argparse.Namespace) -> R:
        """The request in what a parser built by :func:`add_arguments` returned (evaluator/cli.py's subcommand)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = getattr(args, f.name)
            if f.metadata["kind"] == "negated":
                value = not value
            elif f.metadata["kind"] == "ints":
                value = _ints(value, f.metadata["flag"])
            values[f.name] = value
        return cls(**values)


def world_size_or_auto(text: str) -> int | str:
    """``--hidden-world-size``'s value: a world size, or ``auto`` (the judge draws one)."""
    if text == HIDDEN_WORLD_AUTO:
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a world size or {HIDDEN_WORLD_AUTO!r}, not {text!r}") from None


@dataclass(frozen=True)
class JudgeRequest(_Request):
    """One ``pkb eval``: every option the judge's command line takes, with its default."""

    COMMAND: ClassVar[str] = EVAL
    HIDDEN_WORLD_AUTO: ClassVar[str] = HIDDEN_WORLD_AUTO  # for the site, which imports the request alone (schema.py)

    problem: str = field(metadata=_option("problem", "problem id or stem", kind="positional"))
    candidate: str = field(
        metadata=_option("candidate", "path to a .py defining solution(*inputs), or 'reference'", kind="positional")
    )
    world_size: int = field(
        metadata=_option("--world-size", "number of ranks", type=int, always=True, short="-W", required=True)
    )
    device: str = field(
        default="cpu", metadata=_option("--device", "cpu: gloo ranks; cuda: NCCL ranks", always=True, choices=DEVICES)
    )
    trials: int = field(
        default=5,
        metadata=_option(
            "--trials",
            "correctness trials, each on fresh seeds (default 5); one re-check trial follows timing, so a "
            "result lists trials + 1. A site uses its profile's count (cpu-gloo: 3): pkb submit prints it",
            type=int,
            always=True,
        ),
    )
    seed: int | None = field(
        default=None, metadata=_option("--seed", "seed of the trial seeds (default: random)", type=int)
    )
    M: int = field(default=1024, metadata=_option("--M", "the problem's M (default 1024)", type=int))
    N: int = field(default=1024, metadata=_option("--N", "the problem's N (default 1024)", type=int))
    reduced: bool = field(
        default=False, metadata=_option("--reduced", "CPU development shapes where a spec fixes huge ones", kind="flag")
    )
    json_out: str | None = field(
        default=None, metadata=_option("--json", "write the result document (- for stdout)", always=True, metavar="OUT")
    )
    dtype: str = field(
        default="bfloat16", metadata=_option("--dtype", "the inputs' dtype (default bfloat16)", choices=DTYPES)
    )
    timing: bool = field(
        default=True, metadata=_option("--no-timing", "correctness only: no timed loop", kind="negated")
    )
    multicast_allowed: bool = field(
        default=False, metadata=_option("--multicast-allowed", "the host profile permits NVLink multicast", kind="flag")
    )
    shared_device: bool = field(
        default=False,
        metadata=_option(
            "--shared-device",
            "every rank of both groups on one GPU (gloo with CUDA tensors), for hosts with fewer GPUs "
            "than ranks: multi-rank correctness only, never timed or ranked (implies --no-timing)",
            kind="flag",
        ),
    )
    sandbox_required: bool = field(
        default=False,
        metadata=_option(
            "--require-sandbox",
            "fail closed: run the candidate only inside the complete sandbox, else infra_error "
            "(ranked site profiles always do this; PKB_SANDBOX=required does it for every eval)",
            kind="flag",
        ),
    )
    timeout_s: float | None = field(
        default=None, metadata=_option("--timeout", "seconds per trial/timing block (hang detection)", type=float)
    )
    seeds: tuple[int, ...] | None = field(
        default=None,
        metadata=_option("--seeds", "explicit public trial seeds, comma-separated (trials + 1)", kind="ints"),
    )
    hidden_shape: bool = field(
        default=False,
        metadata=_option(
            "--hidden-shape",
            "one more correctness trial at a shape (M', N') the judge draws (ranked site runs do this)",
            kind="flag",
        ),
    )
    hidden_world_size: int | str | None = field(
        default=None,
        metadata=_option(
            "--hidden-world-size",
            "a correctness-only run at another world size W2 allowed by the problem; auto: the judge draws one "
            "the candidate cannot predict, among those this host can run (ranked site runs ask for auto)",
            type=world_size_or_auto,
            metavar="W2|auto",
        ),
    )
    pairs: int = field(
        default=1,
        metadata=_option(
            "--pairs", "time in K fresh process pairs and combine them (evaluator/timing/pairs.py); default 1", type=int
        ),
    )
    profile_dir: str | None = field(
        default=None,
        metadata=_option(
            "--profile",
            "also record a torch profiler trace per rank: DIR/trace.json (merged), DIR/summary.json",
            metavar="DIR",
        ),
    )

    def __post_init__(self) -> None:
        if self.shared_device and self.timing:  # a shared world is never timed (evaluator/judge/config.py)
            object.__setattr__(self, "timing", False)
        if self.seeds is not None:  # any sequence in, a tuple kept (the request is frozen and compares by value)
            object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds) or None)
        if isinstance(self.hidden_world_size, str) and self.hidden_world_size != HIDDEN_WORLD_AUTO:
            raise ValueError(f"hidden_world_size is a number or {HIDDEN_WORLD_AUTO!r}, not {self.hidden_world_size!r}")
        super().__post_init__()


@dataclass(frozen=True)
class PrebuildRequest(_Request):
    """One ``pkb prebuild``: the build stage of a file (evaluator/judge/prebuild.py). It runs on CPU cores with the
    GPUs hidden, in the sandbox, and builds the file's extensions into the judge's build cache under the key of the
    ``target_device`` job that will load them; ``arch`` is that job's TORCH_CUDA_ARCH_LIST (part of every build's
    fingerprint, so the job finds the stage's build only when both name the same list)."""

    COMMAND: ClassVar[str] = PREBUILD

    problem: str = field(metadata=_option("problem", "problem id or stem", kind="positional"))
    candidate: str = field(metadata=_option("candidate", "path to the candidate .py", kind="positional"))
    target_device: str = field(
        default="cuda",
        metadata=_option(
            "--target-device",
            "the device of the job that will load the builds (their cache key)",
            always=True,
            choices=DEVICES,
        ),
    )
    json_out: str | None = field(
        default=None, metadata=_option("--json", "write the stage's report (- for stdout)", always=True, metavar="OUT")
    )
    sandbox_required: bool = field(
        default=False,
        metadata=_option(
            "--require-sandbox",
            "fail closed: build only inside the complete sandbox, else status infra_error",
            kind="flag",
        ),
    )
    timeout_s: float | None = field(
        default=None,
        metadata=_option("--timeout", "seconds for the candidate's start and its first call (default 900)", type=float),
    )
    arch: str | None = field(
        default=None,
        metadata=_option(
            "--arch",
            "TORCH_CUDA_ARCH_LIST of the builds: the GPU job's (e.g. 9.0 on an H200); default: inherited",
            metavar="LIST",
        ),
    )
    max_jobs: int | None = field(
        default=None,
        metadata=_option(
            "--max-jobs", "compile processes per build (MAX_JOBS); default: inherited", type=int, metavar="N"
        ),
    )
    nice: int = field(
        default=0,
        metadata=_option(
            "--nice", "lower the stage's CPU priority by N (its ranks and compilers inherit it)", type=int
        ),
    )


def _ints(text: str | None, flag: str) -> tuple[int, ...] | None:
    """``--seeds a,b,c``: explicit published seeds (the feedback endpoint's); None when not given."""
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"pkb eval: bad {flag} {text!r} (comma-separated integers)") from None


# Options ``pkb selfcheck`` shares with ``eval`` (evaluator/cli.py): the world, its shapes and trials, the output.
SHAPE_FIELDS = ("world_size", "device", "trials", "seed", "M", "N", "reduced", "json_out", "shared_device")


def add_arguments(
    parser: argparse.ArgumentParser, names: Collection[str] | None = None, request: type[_Request] | None = None
) -> argparse.ArgumentParser:
    """Add a request's options (``request``: JudgeRequest unless given; all its fields, or the fields ``names``) to
    ``parser``: the judge's command line is built from here, so it reads exactly what the request's ``argv`` writes."""
    for f in dataclasses.fields(request or JudgeRequest):
        if names is not None and f.name not in names:
            continue
        spec = f.metadata
        kind, extra = spec["kind"], dict(spec["extra"])
        if kind == "positional":
            parser.add_argument(f.name, help=spec["help"])
            continue
        flags = [spec["flag"]] + ([extra.pop("short")] if "short" in extra else [])
        if kind in ("flag", "negated"):
            parser.add_argument(*flags, dest=f.name, action="store_true", help=spec["help"])
        elif kind == "ints":
            parser.add_argument(*flags, dest=f.name, default=None, help=spec["help"], **extra)
        else:
            default = None if f.default is dataclasses.MISSING else f.default
            parser.add_argument(*flags, dest=f.name, type=spec["type"], default=default, help=spec["help"], **extra)
    return parser


# --- the warm judge (evaluator/serve.py): the process a worker starts once, then sends requests ---------------------

SERVE = (sys.executable, "-m", "evaluator.serve")


def serve_command(world_size: int, device: str, warm: int, reply_fd: int) -> list[str]:
    """The long-lived judge's command line (leaderboard/jobs/judge_service.py starts it; its pool's world)."""
    return [
        *SERVE,
        "--world-size",
        str(world_size),
        "--device",
        device,
        "--warm",
        str(warm),
        "--reply-fd",
        str(reply_fd),
    ]


def serve_parser(description: str = "") -> argparse.ArgumentParser:
    """What evaluator/serve.py reads: exactly what :func:`serve_command` writes."""
    parser = argparse.ArgumentParser(prog="python -m evaluator.serve", description=description)
    world = next(f for f in dataclasses.fields(JudgeRequest) if f.name == "world_size").metadata
    parser.add_argument(world["flag"], dest="world_size", type=int, required=True, help=world["help"])
    parser.add_argument("--device", choices=DEVICES, required=True)
    parser.add_argument("--warm", type=int, default=1, help="rank groups started ahead of the jobs")
    parser.add_argument("--reply-fd", type=int, required=True, help="where each request's exit status is written")
    return parser


class BadDeviceSet(ValueError):
    """A device set (``--gpus``, ``PKB_GPUS``) that names no devices, or one twice."""


def device_set(spec: str) -> list[int]:
    """``"0-3"`` -> [0, 1, 2, 3]; ``"0,2,4-5"`` -> [0, 2, 4, 5]: how the judge's ``--gpus`` and a site worker's
    ``PKB_GPUS`` name the GPUs they are pinned to (one syntax, read here alone)."""
    devices: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise BadDeviceSet(f"not a device index or range: {part!r}")
        span = range(int(low), int(high) + 1) if sep else [int(low)]
        if not span:
            raise BadDeviceSet(f"an empty range: {part!r}")
        devices.extend(span)
    if not devices:
        raise BadDeviceSet(f"no devices in {spec!r}")
    if len(set(devices)) != len(devices):
        raise BadDeviceSet(f"a device is named twice in {spec!r}")
    return devices


# The calls that build an extension on the CPU side (evaluator/pkb_utils/utils/cuda_helpers.py and torch's own): a file
# naming one goes to the build stage first. A Triton kernel compiles only at its first launch, against a GPU: the
# stage cannot build it. The scan is a shortcut, never a judgement: a build it misses is made in the file's job.
COMPILE_CALLS = ("compile_cuda_extension", "load_inline", "cpp_extension")


def has_compile_call(code: str) -> bool:
    return any(call in (code or "") for call in COMPILE_CALLS)
