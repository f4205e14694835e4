"""Load the 87 problems (catalogue facts for all, reference and docstring for those the registry implements),
create the default hardware profiles, and queue jobs for candidates whose problem became implemented. A command of the
project, not of the catalogue app: it drives the catalogue and the jobs app, above both (docs/architecture.md)."""

import importlib
import pkgutil

from django.core.management.base import BaseCommand

from leaderboard.catalogue import services as catalogue_services
from leaderboard.submissions import services as submissions_services


def _registry(stderr) -> dict:
    import problems

    try:
        return dict(problems.registry())
    except Exception as exc:  # noqa: BLE001 - one broken module, however broken, must not hide the others
        stderr.write(f"registry failed ({exc}); loading problem modules one by one")
    found = {}
    for info in pkgutil.iter_modules(problems.__path__):
        if not problems._MODULE_RE.match(info.name):
            continue
        try:
            module = importlib.import_module(f"problems.{info.name}")
            found[module.PROBLEM.id] = module.PROBLEM
        except Exception as exc:  # noqa: BLE001 - a module that fails to import, whatever the error, is skipped
            stderr.write(f"  skipped problems/{info.name}.py: {exc}")
    return found


def highlight(source: str) -> str:
    try:
        from pygments import highlight as render
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:  # plain <pre> on the page
        return ""
    return render(source, PythonLexer(), HtmlFormatter(cssclass="code", linenos="table"))


class Command(BaseCommand):
    help = "Load problems/catalogue.json and the problem registry into the database (idempotent)."

    def handle(self, *args, **options):
        import problems

        catalogue_services.profiles_ensure_defaults()
        registry = _registry(self.stderr)
        counts = catalogue_services.problems_load(problems.catalogue(), registry, highlight=highlight)
        queued = submissions_services.jobs_create_missing()
        self.stdout.write(
            f"problems: {counts['created']} created, {counts['updated']} updated, "
            f"{counts['implemented']} implemented; {queued} waiting candidate(s) queued"
        )
