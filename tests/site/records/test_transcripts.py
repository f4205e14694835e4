"""Issue 35: agent transcripts uploaded with a submission (hostile input refused like archives), their page (steps,
tool calls and results, metered feedback runs in place), owner-only until published."""

from __future__ import annotations

import json

import pytest

from leaderboard.submissions import services as submissions_services
from leaderboard.submissions import uploads
from leaderboard.submissions.models import Transcript
from tests.site.conftest import GOOD_1, judge_document, zip_bytes

OPENAI = [
    {"role": "system", "content": "You write multi-GPU kernels."},
    {"role": "user", "content": "Make 1_allreduce faster."},
    {
        "role": "assistant",
        "content": "I will try a ring.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "pkb_feedback", "arguments": '{"problem": 1, "file": "a.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "feedback run 999999: incorrect, rank 1 mismatch"},
]
ANTHROPIC = [
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking the spec."},
            {"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "spec.md"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_1",
                "content": [{"type": "text", "text": "all-reduce a bf16 tensor"}],
                "is_error": False,
            }
        ],
    },
]


def jsonl(rows) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def upload(user, submit, transcripts: dict, protocol="agentic_feedback", **changes):
    files = {"1_allreduce_torch.py": GOOD_1, **transcripts}
    return submit(user, files, protocol=protocol, attempts=1 if protocol != "best_of_k" else 2, **changes)


def refused(submit, user, data: bytes, name="transcripts/run.jsonl"):
    with pytest.raises(uploads.UploadRejected) as caught:
        upload(user, submit, {name: data})
    errors = [e for e in caught.value.errors if e.rule == "bad_transcript"]
    assert errors and errors[0].file == name, caught.value.errors
    assert not Transcript.objects.exists()
    return errors[0].message


def test_transcripts_are_stored_and_tied_to_a_problem_or_the_whole_run(owner, submit):
    submission = upload(
        owner, submit, {"transcripts/1_allreduce.jsonl": jsonl(OPENAI), "transcripts/session.jsonl": jsonl(ANTHROPIC)}
    )
    stored = {t.filename: t for t in submission.transcripts.all()}
    assert (
        stored["transcripts/1_allreduce.jsonl"].problem_id == 1 and stored["transcripts/1_allreduce.jsonl"].steps == 4
    )
    assert stored["transcripts/session.jsonl"].problem_id is None and stored["transcripts/session.jsonl"].steps == 2


def test_a_transcript_in_an_archive_with_an_attempt_folder(owner, cpu):
    archive = zip_bytes(
        {
            "run/attempt_1/1_allreduce_torch.py": GOOD_1,
            "run/attempt_2/1_allreduce_torch.py": GOOD_1,
            "run/attempt_2/1_allreduce_agent.jsonl": jsonl(ANTHROPIC),
        }
    )
    submission = submissions_services.submission_create(
        owner.submitter,
        {"model": "m", "protocol": "best_of_k", "attempts": 2, "profile": "cpu-gloo"},
        [("run.zip", archive)],
    )
    t = submission.transcripts.get()
    assert (t.attempt, t.problem_id) == (2, 1)


@pytest.mark.parametrize(
    "data, says",
    [
        (b'{"role": "user"}\n[1, 2]\n', "line 2: must be a JSON object"),
        (b'{"a": NaN}\n', "NaN is not JSON"),
        (b'{"a": 1}\n{"b": \n', "line 2: not JSON"),
        (('{"a": ' * 40 + "1" + "}" * 40 + "\n").encode(), "nested deeper than 32"),
        (("[" * 100_000 + "]" * 100_000).encode(), "line 1"),
        (b"\xff\xfe{}\n", "not UTF-8"),
        (b'{"a": "\x00"}\n', "NUL"),
        (b"\n\n", "empty"),
    ],
)
def test_hostile_transcripts_are_refused_naming_the_file_and_line(owner, submit, data, says):
    assert says in refused(submit, owner, data)


def test_a_transcript_over_the_file_limit_is_refused(owner, submit, settings):
    settings.PKB_MAX_FILE_BYTES = 4096
    big = jsonl([{"role": "user", "content": "x" * 1000} for _ in range(10)])
    with pytest.raises(uploads.UploadRejected) as caught:
        upload(owner, submit, {"transcripts/big.jsonl": big})
    assert any(e.file == "transcripts/big.jsonl" for e in caught.value.errors)


def test_too_many_steps_are_refused(owner, submit, monkeypatch):
    from leaderboard.submissions.uploads import transcripts

    monkeypatch.setattr(transcripts, "MAX_STEPS", 3)
    assert "at most 3 steps" in refused(submit, owner, jsonl(OPENAI))


def test_one_shot_submissions_carry_no_transcript(owner, submit):
    with pytest.raises(uploads.UploadRejected) as caught:
        upload(owner, submit, {"transcripts/run.jsonl": jsonl(OPENAI)}, protocol="one_shot")
    assert [e.rule for e in caught.value.errors] == ["bad_transcript"]
    assert "agentic or best-of-k" in caught.value.errors[0].message


def test_the_transcript_page_shows_steps_calls_and_results(owner, submit, client):
    submission = upload(owner, submit, {"transcripts/1_allreduce.jsonl": jsonl(OPENAI + ANTHROPIC)})
    t = submission.transcripts.get()
    client.force_login(owner)
    html = client.get(f"/transcripts/{t.pk}/").content.decode()
    assert html.count('<li id="step-') == 6 and "6 steps, 2 tool calls" in html
    assert "<code>pkb_feedback</code>" in html and "&quot;problem&quot;: 1" in html  # arguments parsed, indented
    assert "<code>read_file</code>" in html and "all-reduce a bf16 tensor" in html
    assert 'data-role="tool"' in html and "I will try a ring." in html
    raw = client.get(f"/transcripts/{t.pk}/raw.jsonl")
    assert raw.status_code == 200 and raw.content == jsonl(OPENAI + ANTHROPIC)
    # Linked from the submission's page, next to its problem.
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="/transcripts/{t.pk}/"' in page


def test_hostile_markup_in_a_transcript_is_shown_as_text(owner, submit, client):
    rows = [
        {
            "role": "assistant",
            "content": "</pre><script>alert(1)</script>",
            "tool_calls": [{"id": "x", "function": {"name": "<img src=x onerror=alert(2)>", "arguments": "{}"}}],
        }
    ]
    submission = upload(owner, submit, {"transcripts/x.jsonl": jsonl(rows)})
    client.force_login(owner)
    html = client.get(f"/transcripts/{submission.transcripts.get().pk}/").content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<img src=x" not in html


def test_transcripts_are_the_owner_s_until_published(owner, outsider, submit, client):
    submission = upload(owner, submit, {"transcripts/1_allreduce.jsonl": jsonl(OPENAI)})
    t = submission.transcripts.get()
    assert client.get(f"/transcripts/{t.pk}/").status_code == 404
    client.force_login(outsider)
    assert client.get(f"/transcripts/{t.pk}/").status_code == 404
    assert client.get(f"/transcripts/{t.pk}/raw.jsonl").status_code == 404
    submissions_services.submission_publish(submission, owner)
    assert client.get(f"/transcripts/{t.pk}/").status_code == 200
    detail = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert detail["transcripts"][0]["url"].endswith(f"/transcripts/{t.pk}/")


def test_the_leaderboard_cell_links_the_transcript(owner, submit, finish, client):
    submission = upload(owner, submit, {"transcripts/1_allreduce.jsonl": jsonl(OPENAI)}, model="agent-with-log")
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    html = client.get("/").content.decode()
    assert f'href="/transcripts/{submission.transcripts.get().pk}/"' in html and "agent transcript" in html


def test_metered_feedback_runs_are_shown_in_place(owner, outsider, submit, cpu, client):
    from leaderboard.catalogue.models import Problem
    from leaderboard.feedback.models import FeedbackRun, FeedbackSession

    session = FeedbackSession.objects.create(submitter=owner.submitter, profile=cpu)
    run = FeedbackRun.objects.create(
        session=session,
        submitter=owner.submitter,
        profile=cpu,
        problem=Problem.objects.get(pk=1),
        filename="a.py",
        code="",
        sha256="0" * 64,
        world_size=2,
        device="cpu",
        trials=1,
        status="done",
        verdict="incorrect",
        wall_ms=4200,
    )
    foreign = FeedbackRun.objects.create(
        submitter=outsider.submitter,
        profile=cpu,
        problem_id=1,
        filename="b.py",
        code="",
        sha256="0" * 64,
        world_size=2,
        device="cpu",
        trials=1,
        status="done",
        verdict="correct",
        wall_ms=1,
    )
    rows = [
        {"role": "tool", "content": f"feedback run {run.pk}: incorrect"},
        {"role": "tool", "content": f"see /feedback/runs/{foreign.pk}/"},
    ]
    submission = upload(owner, submit, {"transcripts/1_allreduce.jsonl": jsonl(rows)})
    session.submission = submission
    session.save()
    client.force_login(owner)
    html = client.get(f"/transcripts/{submission.transcripts.get().pk}/").content.decode()
    assert f'href="/feedback/runs/{run.pk}/"' in html and "verdict <strong>incorrect</strong>" in html
    assert "4200 ms" in html
    # Another user's run, not metered for this submission, is not presented as one.
    assert f'/feedback/runs/{foreign.pk}/"' not in html and html.count('class="metered"') == 1
