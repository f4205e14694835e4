"""``pkb feedback`` (pkb_client/feedback.py, standard library only) against a live server and a real worker
thread: open a session, ask for feedback (the real judge), show the metered session, link it, print public seeds."""

import json

import pytest

from leaderboard.feedback import seeds
from leaderboard.feedback.models import FeedbackSession
from pkb_client import feedback as client
from tests.feedback.conftest import CANDIDATES

pytestmark = pytest.mark.django_db(transaction=True)


def test_open_ask_show_link(live_server, token, submit, owner, feedback_worker, capsys, tmp_path):
    common = ["--url", live_server.url, "--token", token]
    assert client.main(["open", "--label", "cli"] + common) == 0
    session_id = capsys.readouterr().out.strip()
    assert FeedbackSession.objects.get(pk=int(session_id)).label == "cli"

    out_json = tmp_path / "fb.json"
    code = client.main(
        [
            "1",
            str(CANDIDATES / "syntax_1.py"),
            "--session",
            session_id,
            "--M",
            "64",
            "--N",
            "64",
            "--poll",
            "0.5",
            "--json",
            str(out_json),
        ]
        + common
    )
    printed = capsys.readouterr().out
    assert code == 0 and "verdict: COMPILE_ERROR" in printed and "SyntaxError" in printed
    assert "speed of light: n/a" in printed and "metered: wall" in printed
    body = json.loads(out_json.read_text())
    assert body["feedback"]["verdict"] == "compile_error" and body["seeds"] == seeds.for_run(1, 3)

    assert client.main(["show", session_id] + common) == 0
    assert "measured: 1 feedback runs" in capsys.readouterr().out

    agentic = submit(owner, protocol="agentic_feedback")
    assert client.main(["link", session_id, str(agentic.pk)] + common) == 0
    assert f"linked to submission #{agentic.pk}" in capsys.readouterr().out
    assert client.main(["1", str(CANDIDATES / "good_1.py"), "--session", session_id] + common) == 2
    assert "closed" in capsys.readouterr().err

    assert client.main(["seeds", "1"] + common) == 0
    assert capsys.readouterr().out.split() == [str(s) for s in seeds.public_seeds(1)]


def test_no_token_and_unreachable(cpu, capsys, tmp_path):
    assert client.main(["open", "--url", "http://127.0.0.1:9", "--token", ""]) == 1
    assert client.main(["open", "--url", "http://127.0.0.1:9", "--token", "pkb_x_y"]) == 1
    assert "cannot reach the site" in capsys.readouterr().err
