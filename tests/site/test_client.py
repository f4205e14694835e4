"""``pkb submit`` (leaderboard/client.py) against a live server: standard-library HTTP, refusals printed per file."""
import io
import zipfile

import pytest

from leaderboard import client, services
from leaderboard.models import Submission
from tests.site.conftest import GOOD_1

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(owner, cpu):
    return services.token_create(owner.submitter, "cli", ["read", "submit"])[1]


def pkb_layout(tmp_path, files):
    for path, data in files.items():
        target = tmp_path / "run" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return tmp_path / "run"


def test_submit_directory(live_server, token, tmp_path, capsys):
    folder = pkb_layout(tmp_path, {"attempt_1/1_allreduce_torch.py": GOOD_1, "attempt_2/1_allreduce_torch.py": GOOD_1,
                                   "attempt_1/__pycache__/junk.pyc": b"\0", ".git/config": b"x"})
    code = client.main([str(folder), "--model", "cli-model", "--protocol", "best_of_k", "--attempts", "2",
                        "--profile", "cpu-gloo", "--agent", "h", "--tokens", "10", "--dollars", "0.5",
                        "--url", live_server.url, "--token", token])
    out = capsys.readouterr().out
    assert code == 0 and "accepted: submission #" in out and "2 evaluation(s)" in out
    submission = Submission.objects.get()
    assert submission.model_name == "cli-model" and submission.candidates.count() == 2


def test_submit_archive_as_is(live_server, token, tmp_path, capsys):
    archive = tmp_path / "run.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("1_allreduce_torch.py", GOOD_1)
    code = client.main([str(archive), "--model", "m", "--protocol", "one_shot", "--attempts", "1", "--profile",
                        "cpu-gloo", "--url", live_server.url, "--token", token])
    assert code == 0


def test_refusal_names_file_and_rule(live_server, token, tmp_path, capsys):
    folder = pkb_layout(tmp_path, {"1_allreduse_torch.py": GOOD_1})
    code = client.main([str(folder), "--model", "m", "--protocol", "one_shot", "--attempts", "1", "--profile",
                        "cpu-gloo", "--url", live_server.url, "--token", token])
    err = capsys.readouterr().err
    assert code == 2 and "1_allreduse_torch.py" in err and "[unknown_problem]" in err
    assert not Submission.objects.exists()


def test_bad_token_and_unreachable_site(live_server, cpu, tmp_path, capsys):
    folder = pkb_layout(tmp_path, {"1_allreduce_torch.py": GOOD_1})
    args = [str(folder), "--model", "m", "--protocol", "one_shot", "--attempts", "1", "--profile", "cpu-gloo"]
    assert client.main(args + ["--url", live_server.url, "--token", "pkb_0_x"]) == 1
    assert client.main(args + ["--url", "http://127.0.0.1:9", "--token", "pkb_0_x"]) == 1
    assert client.main(args + ["--url", live_server.url]) == 1  # no token at all
    assert "cannot reach" in capsys.readouterr().err


def test_pack_skips_caches_and_hidden_files(tmp_path):
    folder = pkb_layout(tmp_path, {"1_allreduce_torch.py": GOOD_1, "__pycache__/x.pyc": b"", ".env": b"SECRET=1"})
    name, data = client.pack(folder)
    assert name == "run.zip"
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == ["1_allreduce_torch.py"]
