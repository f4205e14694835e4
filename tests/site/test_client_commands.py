"""``pkb status``, ``pkb wait``, ``pkb list``, ``pkb delete`` and ``pkb --version`` (pkb_client/manage.py, cli.py)
against a live embedded site, and every hint the CLI prints naming a command that parses."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import cli as judge_cli
from leaderboard.accounts import services as accounts_services
from leaderboard.submissions.models import Submission
from pkb_client import cli as client_cli
from pkb_client import feedback as client_feedback
from pkb_client import manage, submit, visibility
from tests.site.conftest import GOOD_1, WRONG_1
from tests.site.test_client import Judge, pkb, pkb_layout

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def token(owner, cpu):
    return accounts_services.token_create(owner.submitter, "cli", ["read", "submit"])[1]


def upload(live_server, token, tmp_path, data=GOOD_1, *extra):
    folder = pkb_layout(tmp_path, {"1_allreduce_torch.py": data})
    done = pkb(
        "submit",
        str(folder),
        "--model",
        "m",
        "--protocol",
        "one_shot",
        "--attempts",
        "1",
        "--profile",
        "cpu-gloo",
        *extra,
        token=token,
        url=live_server.url,
    )
    assert done.returncode == 0, done.stderr
    return Submission.objects.latest("pk"), done


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_status_then_wait_follow_a_submission_made_without_wait(live_server, token, cpu, tmp_path):
    cpu.trials = 1
    cpu.save()
    submission, created = upload(live_server, token, tmp_path, WRONG_1)
    assert f"pkb wait {submission.pk}" in created.stdout and f"pkb status {submission.pk}" in created.stdout
    before = pkb("status", str(submission.pk), token=token, url=live_server.url)
    assert before.returncode == 0, before.stderr
    assert f"submission #{submission.pk}: judging (queued 1" in before.stdout
    assert f"pkb wait {submission.pk}" in before.stdout
    judge = Judge(1)
    judge.start()
    waited = pkb("wait", str(submission.pk), "--poll", "0.3", token=token, url=live_server.url)
    judge.join(30)
    assert judge.error is None and waited.returncode == 0, waited.stderr
    lines = waited.stdout.splitlines()
    # The same verdict line, reason and summary row as pkb submit --wait prints.
    wrong = next(i for i, line in enumerate(lines) if line.split()[:1] == ["incorrect"])
    stored = submission.jobs.get().results.get().message
    assert lines[wrong + 1].strip() == stored.splitlines()[0].strip()
    assert any(line.startswith("finished: Correct 0 (of 87)") for line in lines)
    after = pkb("status", str(submission.pk), token=token, url=live_server.url)
    assert f"submission #{submission.pk}: finished" in after.stdout and "incorrect" in after.stdout
    assert "finished: Correct 0" in after.stdout


@pytest.mark.django_db(transaction=True)
def test_list_filters_and_delete_asks_then_deletes(live_server, token, outsider, tmp_path):
    private, _ = upload(live_server, token, tmp_path / "a")
    public, _ = upload(live_server, token, tmp_path / "b", GOOD_1 + b"\n# another\n", "--publish")
    listed = pkb("list", token=token, url=live_server.url)
    assert listed.returncode == 0, listed.stderr
    ids = [int(line.split()[0]) for line in listed.stdout.splitlines()[1:]]
    assert ids == [public.pk, private.pk] and "judging" in listed.stdout
    only_public = pkb("list", "--published", token=token, url=live_server.url).stdout.splitlines()[1:]
    assert [int(line.split()[0]) for line in only_public] == [public.pk]
    assert "no submission matches" in pkb("list", "--profile", "gpu-h200x8", token=token, url=live_server.url).stdout
    assert "no submission matches" in pkb("list", "--status", "finished", token=token, url=live_server.url).stdout
    # delete: asks (no terminal here: refused with the flag to pass), refuses a published one, deletes a private one.
    asked = pkb("delete", str(private.pk), token=token, url=live_server.url, stdin="")
    assert asked.returncode == 2 and "--yes" in asked.stderr and Submission.objects.filter(pk=private.pk).exists()
    other = accounts_services.token_create(outsider.submitter, "cli", ["read", "submit"])[1]
    assert pkb("delete", str(private.pk), "--yes", token=other, url=live_server.url).returncode == 2
    published = pkb("delete", str(public.pk), "--yes", token=token, url=live_server.url)
    assert published.returncode == 2 and "withdraw" in published.stderr, published.stderr
    # Its evaluation is still queued (no worker here): refused with the reason, then deleted once it is not.
    queued = pkb("delete", str(private.pk), "--yes", token=token, url=live_server.url)
    assert queued.returncode == 2 and "queued or running" in queued.stderr
    private.jobs.update(status="failed")
    done = pkb("delete", str(private.pk), "--yes", token=token, url=live_server.url)
    assert done.returncode == 0 and f"deleted: submission #{private.pk}" in done.stdout, done.stderr
    assert not Submission.objects.filter(pk=private.pk).exists()


def test_version_and_help_name_the_environment():
    version = subprocess.run([sys.executable, "-m", "evaluator.cli", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and re.fullmatch(r"pkb \d+\.\d+\.\d+ \(pkb-arena(-client)?\)\n", version.stdout)
    assert client_cli.main(["--version"]) == 0
    for command in ("submit", "status", "wait", "list", "delete", "publish", "withdraw"):
        done = subprocess.run(
            [sys.executable, "-m", "evaluator.cli", command, "--help"], capture_output=True, text=True
        )
        assert "PKB_URL" in done.stdout and "PKB_TOKEN" in done.stdout, command


def test_client_alone_points_at_no_unpublished_package(capsys):
    assert client_cli.main(["eval"]) == 2
    err = capsys.readouterr().err
    assert "pip install ." in err and "pip install pkb-arena" not in err


# --- every hint the CLI prints names a command that exists, and parses ------------------------------------------------

PLACEHOLDERS = {"ID": "7", "DIR": ".", "PROBLEM": "1", "FILE": "f.py", "S": "3", "SUBMISSION": "7"}


def parses(hint: str) -> None:
    """Parse ``pkb COMMAND ...`` with the parser that would read it (placeholders given sample values)."""
    words = [PLACEHOLDERS.get(word, word) for word in shlex.split(hint)[1:]]
    command, rest = words[0], words[1:]
    client = {
        "submit": submit.build_parser,
        "publish": lambda: visibility.build_visibility_parser("publish"),
        "withdraw": lambda: visibility.build_visibility_parser("withdraw"),
        "status": manage.build_status_parser,
        "wait": manage.build_wait_parser,
        "list": manage.build_list_parser,
        "delete": manage.build_delete_parser,
    }
    if command in client:
        client[command]().parse_args(rest)
    elif command == "feedback":
        sub = rest[0] if rest and rest[0] in client_feedback.HELP else None
        client_feedback.build_parser(sub).parse_args(rest[1:] if sub else rest)
    else:
        judge_cli.build_parser().parse_args(words)


def hints_in_source() -> set[str]:
    """``pkb WORD`` in every string of the client and the judge's CLI (names only: their arguments vary)."""
    found = set()
    for path in list((ROOT / "pkb_client").glob("*.py")) + [ROOT / "evaluator" / "cli.py"]:
        found |= set(re.findall(r"\bpkb ([a-z][a-z-]+)\b", path.read_text()))
    return found


def test_every_hint_names_a_command_that_parses():
    names = hints_in_source()
    judge_commands = set(judge_cli.build_parser()._subparsers._group_actions[0].choices)
    assert {"status", "wait", "list", "delete", "publish", "eval"} <= names
    assert names <= judge_commands | {"feedback"}, names - judge_commands
    printed = [
        submit.publish_note({"id": 7, "visibility": "private"}),
        submit.trials_note({"slug": "cpu-gloo", "trials": 1, "world_size": 2, "device": "cpu"}),
        manage.status_text(7, {"jobs": {"queued": 1}, "finished": False, "files": []}),
        submit.document("http://x", {"id": 7}, None)["publish"]["command"],
        "pkb submit DIR --wait",
    ]
    hints = [m.group(0).rstrip(".;)") for line in printed for m in re.finditer(r"pkb [a-z][^;()\n]*", line)]
    assert len(hints) == len(printed)
    for hint in hints:
        parses(hint)  # SystemExit (argparse's refusal) fails the test, naming the hint
