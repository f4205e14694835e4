"""The import rules between the layers (docs/architecture.md), checked by walking every non-test module's imports
with ``ast`` (lazy imports inside functions included). A failure names file:line of each forbidden import.

- problems/ never imports the judge (evaluator), the site (leaderboard), the client or Django;
- evaluator/ never imports the site or Django (the judge runs without them);
- the site (leaderboard/) takes from the judge only the torch-free contract, ``evaluator.contract``; what else it
  needs of the judge it asks the judge's command line (leaderboard/jobs/runner.py, leaderboard/jobs/judge_commands.py);
- evaluator/contract/schema.py, and every judge module it imports (the contract's closure), import the standard library
  only: the site loads it without torch;
- pkb_client/ (the ``pkb`` command's site client) is standard library (rich, lazily) and the contract's modules (the
  feedback text: evaluator/contract/feedback_text.py), and talks HTTP only: it installs without torch
  (client/pyproject.toml);
- selectors (reads: selectors.py, and a family's problem_selectors.py ...) never import services (writes): services
  may read through selectors, not the other way;
- services take plain values: no ``request`` parameter, no request attributes (FILES, POST, GET, META, COOKIES,
  a QueryDict's getlist);
- neither the site nor the judge has an import cycle, between modules or between packages (a sub-package such as
  leaderboard.jobs, evaluator.rank or evaluator.contract, or a top module such as evaluator.cli, as one node);
  PACKAGE_CYCLE_ALLOWED names each edge that still closes one, and why.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evaluator", "problems", "leaderboard", "pkb_client")
THIRD_PARTY_ALLOWED_IN_CLIENT = {"rich"}
CONTRACT_ROOT = "evaluator/contract/schema.py"


def contract_closure(read=lambda rel: (ROOT / rel).read_text()) -> set[str]:
    """evaluator/contract/schema.py and the judge modules it imports, transitively (the files the site loads of the
    judge)."""
    closure, todo = set(), [CONTRACT_ROOT, "evaluator/__init__.py"]  # importing a module runs its package's too
    while todo:
        rel = todo.pop()
        if rel in closure:
            continue
        closure.add(rel)
        for _line, target in imports(ast.parse(read(rel)), module_name(ROOT / rel), rel.endswith("__init__.py")):
            if target.split(".")[0] == "evaluator":
                for candidate in (target.replace(".", "/") + ".py", target.replace(".", "/") + "/__init__.py"):
                    if (ROOT / candidate).is_file():
                        todo.append(candidate)
    return closure


REQUEST_ATTRIBUTES = {"FILES", "POST", "GET", "META", "COOKIES", "getlist"}  # getlist: a QueryDict's


def modules() -> list[Path]:
    found = []
    for package in PACKAGES:
        found += [p for p in sorted((ROOT / package).rglob("*.py")) if "__pycache__" not in p.parts]
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(tree: ast.AST, name: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) for every import in ``tree``; ``from a import b`` yields a.b (b may be a module) and a."""
    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
    return out


CONTRACT = contract_closure()
CONTRACT_MODULES = tuple(module_name(ROOT / rel) for rel in CONTRACT)


def _under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _in_contract(target: str) -> bool:
    """A module of the contract's closure, or a name in one (``from evaluator.contract.schema import JudgeRequest``)."""
    parent = target.rpartition(".")[0]
    return target in CONTRACT_MODULES or (parent in CONTRACT_MODULES and parent != "evaluator")


def violations_of(rel: str, source: str) -> list[str]:
    """The forbidden imports (and request-taking services) of one module, as 'file:line: why'."""
    path = ROOT / rel
    tree = ast.parse(source, filename=rel)
    name = module_name(path)
    found, seen = [], set()

    def bad(line: int, why: str) -> None:
        rule = why.split(" imports ")[0]
        if (line, rule) not in seen:  # ``from a.b import c`` yields a.b and a.b.c: one report per statement and rule
            seen.add((line, rule))
            found.append(f"{rel}:{line}: {why}")

    for line, target in imports(tree, name, path.name == "__init__.py"):
        top = target.split(".")[0]
        if rel.startswith("problems/") and top in ("evaluator", "leaderboard", "pkb_client", "django"):
            bad(line, f"problems/ imports {target} (problems never import the judge, the site or Django)")
        if rel.startswith("evaluator/") and top in ("leaderboard", "django"):
            bad(line, f"evaluator/ imports {target} (the judge never imports the site or Django)")
        if (
            rel in CONTRACT
            and top not in sys.stdlib_module_names
            and top != "__future__"
            and not _under(target, *CONTRACT_MODULES)
        ):
            bad(
                line,
                f"{rel} imports {target} (the contract, evaluator/contract/schema.py and what it imports, is standard "
                f"library only)",
            )
        if rel.startswith("leaderboard/") and top == "evaluator" and not _under(target, "evaluator.contract"):
            if target != "evaluator":  # ``from evaluator import contract`` also yields the bare package
                bad(line, f"the site imports {target} (it takes only the contract, evaluator.contract, from the judge)")
            elif not isinstance(_node_at(tree, line), ast.ImportFrom):
                bad(
                    line,
                    "the site imports the evaluator package (it takes only the contract, evaluator.contract, from the "
                    "judge)",
                )
        if (
            rel.startswith("pkb_client/")
            and top not in sys.stdlib_module_names
            and top != "__future__"
            and not _under(target, "pkb_client")
            and top not in THIRD_PARTY_ALLOWED_IN_CLIENT
            and not _in_contract(target)
        ):
            bad(
                line,
                f"pkb_client/ imports {target} (the client is standard library and the judge's contract, and "
                "talks HTTP only)",
            )
        if (
            rel.startswith("leaderboard/")
            and path.name.endswith("selectors.py")
            and target.split(".")[-1] == "services"
        ):
            bad(line, f"a selector imports {target} (reads never import writes)")
    if rel.startswith("leaderboard/") and path.name == "services.py":
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
                if "request" in names:
                    bad(node.lineno, f"service {node.name}() takes a request (services take plain values)")
            if isinstance(node, ast.Attribute) and node.attr in REQUEST_ATTRIBUTES:
                bad(node.lineno, f"a service reads request.{node.attr} (services take plain values)")
    return found


def _node_at(tree: ast.AST, line: int):
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == line), None)


def test_every_import_follows_the_layers():
    paths = modules()
    assert len(paths) > 150, "the walk found too few modules"
    found = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        found += violations_of(rel, path.read_text())
    assert not found, "forbidden imports:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "rel, source, expected",
    [
        ("problems/p99_x.py", "def f():\n    from evaluator.rank.outputs import check_file\n", "problems/p99_x.py:2"),
        ("problems/p99_x.py", "from leaderboard import models\n", "problems/p99_x.py:1"),
        ("evaluator/x.py", "import django.conf\n", "evaluator/x.py:1"),
        ("evaluator/x.py", "from leaderboard.client import send\n", "evaluator/x.py:1"),
        ("evaluator/contract/schema.py", "import torch\n", "evaluator/contract/schema.py:1"),
        ("leaderboard/x.py", "from evaluator.pairs import MAX_PAIRS\n", "leaderboard/x.py:1"),
        ("leaderboard/x.py", "from evaluator import processes\n", "leaderboard/x.py:1"),
        ("leaderboard/x.py", "import evaluator\n", "leaderboard/x.py:1"),
        ("leaderboard/selectors.py", "from leaderboard.services import quota_usage\n", "leaderboard/selectors.py:1"),
        ("leaderboard/feedback/selectors.py", "from . import services\n", "leaderboard/feedback/selectors.py:1"),
        (
            "leaderboard/scoring/problem_selectors.py",
            "from leaderboard.scoring import services\n",
            "leaderboard/scoring/problem_selectors.py:1",
        ),
        ("leaderboard/services.py", "def upload(request):\n    pass\n", "leaderboard/services.py:1"),
        ("leaderboard/services.py", "def upload(files):\n    return files.FILES\n", "leaderboard/services.py:2"),
        ("pkb_client/x.py", "import leaderboard.feedback.report\n", "pkb_client/x.py:1"),
        ("pkb_client/x.py", "import requests\n", "pkb_client/x.py:1"),
        ("pkb_client/x.py", "from evaluator import judge\n", "pkb_client/x.py:1"),
        ("pkb_client/x.py", "import evaluator.timing.physics\n", "pkb_client/x.py:1"),
    ],
)
def test_the_walk_names_file_and_line_of_a_forbidden_import(rel, source, expected):
    found = violations_of(rel, source)
    assert len(found) == 1 and found[0].startswith(expected + ":"), found


def test_the_contract_is_what_the_site_loads_of_the_judge():
    assert {"evaluator/__init__.py", "evaluator/contract/schema.py"} <= CONTRACT
    assert "evaluator/judge/evaluation.py" not in CONTRACT and "evaluator/timing/pairs.py" not in CONTRACT


@pytest.mark.parametrize(
    "rel, source",
    [
        ("leaderboard/x.py", "from evaluator.contract import schema\nfrom evaluator.contract.schema import VERDICTS\n"),
        ("leaderboard/selectors.py", "from leaderboard.models import Submission\n"),
        ("evaluator/cli.py", "from pkb_client import submit\nimport problems\n"),
        ("pkb_client/x.py", "import json\nfrom rich.progress import Progress\nfrom pkb_client.submit import send\n"),
        (
            "pkb_client/x.py",
            "from evaluator.contract.feedback_text import text\nfrom evaluator.contract import schema\n",
        ),
    ],
)
def test_the_walk_allows_what_the_layers_allow(rel, source):
    assert violations_of(rel, source) == []


def test_the_site_loads_the_contract_without_torch():
    import subprocess

    code = (
        "import sys, evaluator.contract.schema; "
        "print(sorted(m for m in ('torch', 'django', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


# --- the site's apps --------------------------------------------------------------------------------------------------
#
# The site is a project (leaderboard/: settings, urls, the tables' migration history) and apps by area: catalogue,
# accounts, submissions, jobs, scoring, feedback, with the HTML pages (pages/) and the REST API (api/) as its edges.
# What an app holds (models, services, selectors, the lease engine, the runner) never imports an edge: requests come
# in through the edges, never the other way.

EDGE_PACKAGES = ("leaderboard.pages", "leaderboard.api", "leaderboard.urls")
EDGE_FILES = ("views.py", "api.py", "urls.py", "admin.py")


def is_edge(rel: str) -> bool:
    name = module_name(ROOT / rel)
    return (
        _under(name, *EDGE_PACKAGES)
        or Path(rel).name in EDGE_FILES
        or "/management/" in rel
        or "/templatetags/" in rel
        or rel.startswith(("leaderboard/settings", "leaderboard/wsgi"))
    )


def edge_violations(rel: str, source: str) -> list[str]:
    if not rel.startswith("leaderboard/") or "/migrations/" in rel or is_edge(rel):
        return []
    tree = ast.parse(source, filename=rel)
    found = []
    for line, target in imports(tree, module_name(ROOT / rel), rel.endswith("__init__.py")):
        edge = (
            _under(target, *EDGE_PACKAGES)
            or target.rpartition(".")[2] in ("views", "api", "urls", "admin")
            and target.startswith("leaderboard.")
        )
        if edge and f"{rel}:{line}" not in [f.split(": ")[0] for f in found]:
            found.append(f"{rel}:{line}: imports {target} (an app's insides never import the site's edges)")
    return found


def _sources(package: str) -> list[tuple[str, str, str]]:
    """(module, file, source) of every module of ``package`` but its migrations."""
    return [
        (module_name(p), p.relative_to(ROOT).as_posix(), p.read_text())
        for p in modules()
        if module_name(p).split(".")[0] == package and "migrations" not in p.parts
    ]


def import_graph(sources: list[tuple[str, str, str]]) -> dict[str, dict[str, list[str]]]:
    """module -> {module it imports: ['file:line', ...]}, over the modules given (lazy imports count). A module's own
    parent packages are not edges: Python runs them before the module whatever it imports."""
    names = {name for name, _rel, _source in sources}
    graph: dict[str, dict[str, list[str]]] = {}
    for name, rel, source in sources:
        graph[name] = {}
        for line, t in imports(ast.parse(source), name, rel.endswith("__init__.py")):
            if t in names and t != name and not name.startswith(t + "."):
                graph[name].setdefault(t, []).append(f"{rel}:{line}")
    return graph


def strongly_connected(graph) -> list[list[str]]:
    """The groups of more than one node that reach each other round a circle (Tarjan's strongly connected
    components)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def import_cycles(package: str) -> list[list[str]]:
    """Groups of modules of ``package`` that import each other, directly or round a circle (lazy imports count)."""
    return strongly_connected(import_graph(_sources(package)))


def package_of(module: str) -> str:
    """A module's node in the graph of packages: a sub-package (leaderboard.jobs, evaluator.rank) stands for every
    module under it, its own sub-packages included; a module at the top (leaderboard.urls, evaluator.contract.schema)
    for itself."""
    return ".".join(module.split(".")[:2])


def package_edges(sources: list[tuple[str, str, str]]) -> dict[tuple[str, str], list[str]]:
    """(package, package it imports) -> ['file:line', ...] of the imports that make the edge."""
    edges: dict[tuple[str, str], list[str]] = {}
    for name, targets in import_graph(sources).items():
        for target, where in targets.items():
            if package_of(name) != package_of(target):
                edges.setdefault((package_of(name), package_of(target)), []).extend(where)
    return edges


def package_cycles(sources: list[tuple[str, str, str]], allowed=()) -> list[str]:
    """Each circle of packages that import each other (the allowed edges left out), with the imports that close it."""
    edges = {edge: where for edge, where in package_edges(sources).items() if edge not in allowed}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    found = []
    for group in strongly_connected(graph):
        inside = [
            f"  {a} -> {b}: {', '.join(sorted(set(w))[:3])}"
            for (a, b), w in sorted(edges.items())
            if {a, b} <= set(group)
        ]
        found.append("a cycle among " + ", ".join(group) + ":\n" + "\n".join(inside))
    return found


# Edges allowed to close a cycle between packages: none now. An entry names an edge that cannot be cut yet and why;
# test_the_allowed_package_edges_are_still_there fails once the edge is gone, so the entry goes too.
PACKAGE_CYCLE_ALLOWED: dict[tuple[str, str], str] = {}


def test_an_apps_insides_never_import_the_edges():
    found = []
    for path in modules():
        rel = path.relative_to(ROOT).as_posix()
        found += edge_violations(rel, path.read_text())
    assert not found, "forbidden imports:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "rel, source, bad",
    [
        ("leaderboard/scoring/selectors.py", "def f():\n    from leaderboard.pages.forms import QueryForm\n", True),
        ("leaderboard/jobs/services.py", "from leaderboard.api import errors\n", True),
        ("leaderboard/feedback/services.py", "from leaderboard.feedback import views\n", True),
        ("leaderboard/pages/views.py", "from leaderboard.scoring import selectors\n", False),
        ("leaderboard/feedback/api.py", "from leaderboard.api.serializers import Text\n", False),
        ("leaderboard/scoring/selectors.py", "from leaderboard.scoring.forms import QueryForm\n", False),
    ],
)
def test_the_edge_rule_names_what_it_refuses(rel, source, bad):
    assert bool(edge_violations(rel, source)) is bad


def test_the_site_has_no_import_cycle():
    assert import_cycles("leaderboard") == []


def test_the_judge_has_no_import_cycle():
    assert import_cycles("evaluator") == []


@pytest.mark.parametrize("package", ["leaderboard", "evaluator"])
def test_no_import_cycle_between_sub_packages(package):
    """One level up: each sub-package (leaderboard.jobs, evaluator.rank) or top module (leaderboard.urls,
    evaluator.contract.schema) is a node, and no two reach each other (leaderboard.jobs <-> leaderboard.ops,
    evaluator.process <-> evaluator.rank), lazy imports included."""
    found = package_cycles(_sources(package), PACKAGE_CYCLE_ALLOWED)
    assert not found, "import cycles between packages:\n" + "\n".join(found)


def test_the_allowed_package_edges_are_still_there():
    edges = set(package_edges(_sources("leaderboard") + _sources("evaluator")))
    gone = sorted(set(PACKAGE_CYCLE_ALLOWED) - edges)
    assert not gone, f"no longer imported, drop from PACKAGE_CYCLE_ALLOWED: {gone}"


@pytest.mark.parametrize(
    "package, rel, source, cycle",
    [
        (
            "leaderboard",
            "leaderboard/jobs/x.py",
            "def f():\n    from leaderboard.ops import heartbeat\n",
            "leaderboard.ops",
        ),
        (
            "leaderboard",
            "leaderboard/catalogue/x.py",
            "from leaderboard.scoring import models\n",
            "leaderboard.scoring",
        ),
        ("evaluator", "evaluator/process/x.py", "from evaluator.rank import worker\n", "evaluator.rank"),
    ],
)
def test_the_package_walk_names_a_cycle_and_its_imports(package, rel, source, cycle):
    planted = (module_name(ROOT / rel), rel, source)
    found = package_cycles(_sources(package) + [planted], PACKAGE_CYCLE_ALLOWED)
    assert len(found) == 1 and cycle in found[0].splitlines()[0] and f"{rel}:" in found[0], found


# --- the apps' order ------------------------------------------------------------------------------------------------
#
# The site's apps in dependency order (docs/architecture.md, "The apps' order"): an app imports only apps below it
# (its own modules aside), lazily or not; the edges (pages/, api/) import any app, and no app imports an edge. A lower
# app that must act when a higher one's data changes is called through a signal or registry the higher app connects
# in its AppConfig.ready (leaderboard/jobs/lease.py's register). Counted over every module of leaderboard/<app>/, its
# views, api, admin and management commands included.

APP_ORDER = ("catalogue", "accounts", "jobs", "submissions", "feedback", "scoring")
EDGE_APPS = ("pages", "api")

# Imports against the order in files another change owns while it is under way, as (file, imported app): the test
# below fails once one is gone, so the entry goes too.
APP_ORDER_PENDING: set = set()  # (file, app) imports still being moved against the order; none now


def app_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "leaderboard" and parts[1] in APP_ORDER + EDGE_APPS else None


def app_order_violations(rel: str, source: str) -> list[str]:
    """The imports of one module of an app that reach an app above it or an edge, as 'file:line: why'."""
    own = app_of(module_name(ROOT / rel)) if rel.startswith("leaderboard/") else None
    if own is None or own in EDGE_APPS or "/migrations/" in rel:
        return []
    found, seen = [], set()
    tree = ast.parse(source, filename=rel)
    for line, target in imports(tree, module_name(ROOT / rel), rel.endswith("__init__.py")):
        other = app_of(target)
        if other is None or other == own or (line, other) in seen:
            continue
        if other in EDGE_APPS or APP_ORDER.index(other) > APP_ORDER.index(own):
            seen.add((line, other))
            found.append(
                f"{rel}:{line}: the {own} app imports {target} ({other} is "
                f"{'an edge' if other in EDGE_APPS else 'above it'}: {' < '.join(APP_ORDER)} < edges)"
            )
    return found


def _app_order_found() -> list[str]:
    found = []
    for path in modules():
        rel = path.relative_to(ROOT).as_posix()
        found += app_order_violations(rel, path.read_text())
    return found


def _file_and_app(entry: str) -> tuple[str, str]:
    return entry.split(":")[0], entry.split(" (")[1].split(" is ")[0]


def test_every_app_imports_only_the_apps_below_it():
    found = [f for f in _app_order_found() if _file_and_app(f) not in APP_ORDER_PENDING]
    assert not found, "imports against the apps' order:\n" + "\n".join(found)


def test_the_pending_app_order_imports_are_still_there():
    found = {_file_and_app(f) for f in _app_order_found()}
    assert APP_ORDER_PENDING <= found, f"fixed, drop from APP_ORDER_PENDING: {sorted(APP_ORDER_PENDING - found)}"


@pytest.mark.parametrize(
    "rel, source, bad",
    [
        ("leaderboard/jobs/services.py", "from leaderboard.scoring.services import entry_refresh\n", True),
        ("leaderboard/scoring/costs.py", "def f():\n    from leaderboard.feedback.models import FeedbackRun\n", False),
        ("leaderboard/submissions/selectors.py", "def f():\n    from leaderboard.scoring.models import Audit\n", True),
        ("leaderboard/catalogue/management/commands/x.py", "from leaderboard.jobs import services\n", True),
        ("leaderboard/feedback/views.py", "from leaderboard.pages.forms import IdForm\n", True),
        ("leaderboard/accounts/services.py", "from leaderboard.accounts.models import ApiToken\n", False),
        ("leaderboard/pages/views.py", "from leaderboard.scoring import selectors\n", False),
        ("leaderboard/api/views.py", "from leaderboard.feedback import services\n", False),
        ("leaderboard/scoring/services.py", "from leaderboard.catalogue.models import Problem\n", False),
    ],
)
def test_the_app_order_rule_names_what_it_refuses(rel, source, bad):
    assert bool(app_order_violations(rel, source)) is bad
