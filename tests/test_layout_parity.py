"""One production layout, three spellings: deploy/docker-compose.yml, the systemd units of deploy/systemd/ and
docs/site.md's "Production layout" describe the same processes. Every queue family (a profile's jobs, its builds, its
feedback runs) one of them consumes, the other consumes too; each has the web process (gunicorn) and both reapers;
every command line names a module or management command that exists; and the docs name every unit and service."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
COMPOSE = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())["services"]
# What the units' placeholders stand for in an installed example: the instance, and the env files' values.
EXAMPLE_INSTANCE = {
    "pkb-worker@.service": ["gpu-h200x8"],
    "pkb-gpu-worker@.service": ["0-7"],
    "pkb-build-worker@.service": ["gpu-h200x8"],
    "pkb-reaper@.service": ["jobs", "feedback"],
}


def _entrypoint(target: str) -> list[str]:
    """The ENTRYPOINT of a Dockerfile stage (empty when it has none)."""
    stage = None
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        found = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.I)
        if found:
            stage = found.group(1)
        elif stage == target and line.startswith("ENTRYPOINT"):
            return yaml.safe_load(line[len("ENTRYPOINT") :])
    return []


def compose_commands() -> dict[str, list[str]]:
    """Each service built from the Dockerfile, as the argv its container runs (the target's entrypoint, tini
    dropped, then the command)."""
    found = {}
    for name, service in COMPOSE.items():
        if "build" not in service:
            continue
        argv = service.get("entrypoint") or _entrypoint(service["build"]["target"])
        argv = [a for a in argv if a not in ("/usr/bin/tini", "--")] + list(service.get("command") or [])
        if argv[:2] == ["sh", "-c"]:  # the web's start: its last command is the process that runs
            argv = shlex.split(argv[2].split("exec ")[-1])
        found[name] = argv
    return found


def _env_file_values() -> dict[str, str]:
    values = {}
    for path in UNITS.glob("*.env.example"):
        for line in path.read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip()
    return values


def unit_argv(unit: str, instance: str | None, values: dict[str, str]) -> list[str]:
    """A unit's ExecStart as systemd would run it for ``instance``: %i put in, ``$VAR`` split into words and
    ``${VAR}`` kept as one, from ``values`` (the environment files) or the unit's own Environment= lines."""
    text = (UNITS / unit).read_text()
    env = dict(re.findall(r"^Environment=(\w+)=(\S*)$", text, re.M))
    line = re.search(r"^ExecStart=(.+)$", text, re.M).group(1)
    argv = []
    for word in shlex.split(line.replace("%i", instance or "")):
        braced = re.fullmatch(r"\$\{(\w+)\}", word)
        bare = re.fullmatch(r"\$(\w+)", word)
        if braced or bare:
            name = (braced or bare).group(1)
            value = values[name] if name in values else env[name]
            argv += [value] if braced else value.split()
        else:
            argv.append(word)
    return argv


def unit_commands() -> dict[str, list[str]]:
    """Each unit's ExecStart, once per example instance, with the example environment files' values put in."""
    values = _env_file_values()
    found = {}
    for path in sorted(UNITS.glob("*.service")):
        for instance in EXAMPLE_INSTANCE.get(path.name, [None]):
            argv = unit_argv(path.name, instance, values)
            argv[0] = Path(argv[0]).name
            found[path.name.replace("@.", f"@{instance}.") if instance else path.name] = argv
    return found


def dramatiq_parts(argv: list[str]) -> tuple[list[str], list[str]]:
    """The entry modules and the queues of a dramatiq command line."""
    args = argv[1:]
    modules = [a for a in args[: args.index("--queues")] if not a.startswith("-")] if "--queues" in args else []
    queues = []
    if "--queues" in args:
        for word in args[args.index("--queues") + 1 :]:
            if word.startswith("--"):
                break
            queues.append(word)
    return modules, queues


def family(queue: str) -> str:
    return "build" if queue.startswith("build-") else "feedback" if queue.startswith("feedback-") else "jobs"


def families(commands: dict[str, list[str]]) -> set[str]:
    return {family(q) for argv in commands.values() if argv[0] == "dramatiq" for q in dramatiq_parts(argv)[1]}


def test_every_queue_family_consumed_in_one_spelling_is_consumed_in_the_other():
    units, compose = families(unit_commands()), families(compose_commands())
    assert units == compose == {"jobs", "build", "feedback"}, (units, compose)


def test_the_same_profile_queues_with_their_modules():
    """A queue is consumed by the module that declares its actor: jobs by leaderboard.jobs.actors, feedback runs by
    leaderboard.feedback.worker, builds by leaderboard.jobs.build_stage, in both spellings."""
    owner = {
        "jobs": "leaderboard.jobs.actors",
        "feedback": "leaderboard.feedback.worker",
        "build": "leaderboard.jobs.build_stage",
    }
    for spelling in (unit_commands(), compose_commands()):
        for name, argv in spelling.items():
            if argv[0] != "dramatiq":
                continue
            modules, queues = dramatiq_parts(argv)
            assert queues, f"{name}: a worker without --queues would consume every declared queue"
            for queue in queues:
                assert owner[family(queue)] in modules, f"{name}: {queue} without {owner[family(queue)]}"


@pytest.mark.parametrize("what", ["units", "compose"])
def test_each_spelling_has_the_web_process_and_both_reapers(what):
    commands = unit_commands() if what == "units" else compose_commands()
    kinds = {argv[0] for argv in commands.values()}
    assert {"gunicorn", "dramatiq"} <= kinds
    assert any(argv[:2] == ["gunicorn", "leaderboard.wsgi"] for argv in commands.values())
    reapers = {argv[2] for argv in commands.values() if argv[:2] in (["python", "manage.py"],)}
    assert {"reap_jobs", "reap_feedback"} <= reapers, reapers


def _command_exists(name: str) -> bool:
    return any((ROOT / "leaderboard").glob(f"**/management/commands/{name}.py"))


def test_every_command_line_names_a_module_that_exists():
    checked = 0
    for name, argv in {**unit_commands(), **compose_commands()}.items():
        if argv[0] == "dramatiq":
            modules = dramatiq_parts(argv)[0]
        elif argv[0] == "gunicorn":
            modules = [argv[1].split(":")[0]]
        else:
            assert argv[:2] == ["python", "manage.py"] and _command_exists(argv[2]), f"{name}: {argv}"
            checked += 1
            continue
        assert modules, f"{name}: {argv}"
        for module in modules:
            assert importlib.util.find_spec(module) is not None, f"{name}: no module {module}"
            assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), f"{name}: {module} is not the project's"
            checked += 1
    assert checked >= 10


def test_the_check_of_commands_refuses_a_missing_module():
    """The check above can fail: a command naming a module the tree lacks is found."""
    assert importlib.util.find_spec("leaderboard.jobs.no_such_module") is None
    assert not _command_exists("reap_nothing")
    assert family("build-x") == "build" and family("feedback-x") == "feedback" and family("x") == "jobs"


def test_the_docs_name_every_unit_and_every_compose_service():
    docs = (ROOT / "docs" / "site.md").read_text()
    section = docs[docs.index("## Production layout") :]
    section = section[: section.index("\n## ", 4)]
    for path in UNITS.glob("*.service"):
        assert path.name in section, f"docs/site.md, Production layout, does not name {path.name}"
    for name in COMPOSE:
        assert f"`{name}`" in section, f"docs/site.md, Production layout, does not name compose service {name}"
    for module in (
        "leaderboard.jobs.actors",
        "leaderboard.feedback.worker",
        "leaderboard.jobs.build_stage",
        "gunicorn leaderboard.wsgi",
        "reap_jobs",
        "reap_feedback",
    ):
        assert module in section, module
