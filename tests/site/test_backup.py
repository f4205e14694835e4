"""Backups as docs/site.md says to take them (Production layout, Backups): pg_dump of the site's database in the
custom format, restored with pg_restore into a fresh database, gives back the same leaderboard: the same entries,
scores, results and jobs, read back row for row."""

from __future__ import annotations

import shutil
import subprocess
import uuid

import pytest
from django.db import connection

from tests.site.conftest import judge_document

pytestmark = pytest.mark.django_db(transaction=True)


def _pg_env() -> tuple[list[str], dict]:
    s = connection.settings_dict
    args = ["-h", s["HOST"] or "127.0.0.1", "-p", str(s["PORT"] or 5432), "-U", s["USER"]]
    return args, {"PGPASSWORD": s["PASSWORD"] or "", "PATH": "/usr/bin:/bin"}


TABLES = (
    "leaderboard_leaderboardentry",
    "leaderboard_problemscore",
    "leaderboard_result",
    "leaderboard_evaluationjob",
    "leaderboard_submission",
)


def rows(name: str) -> dict:
    """Every row of the leaderboard's tables in database ``name``, read by a connection of its own."""
    import psycopg

    s = connection.settings_dict
    with psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"],
        password=s["PASSWORD"] or None,
        dbname=name,
    ) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall() for table in TABLES}


def test_pg_dump_then_pg_restore_into_a_fresh_database_reads_the_same_leaderboard(owner, submit, finish, tmp_path):
    from leaderboard.submissions import services as submissions_services

    if connection.vendor != "postgresql":
        pytest.skip("the production database is PostgreSQL")
    for tool in ("pg_dump", "pg_restore", "createdb", "dropdb"):
        assert shutil.which(tool), f"{tool} is missing (Debian's postgresql-client; scripts/services.sh)"
    for verdict in ("correct", "wrong"):
        submission = submit(owner)
        finish(submission.jobs.get(), judge_document(verdict))
        submissions_services.submission_publish(submission, owner)
    from leaderboard.scoring.models import LeaderboardEntry

    assert LeaderboardEntry.objects.filter(listed=True).count() == 2
    before = rows(connection.settings_dict["NAME"])
    assert len(before["leaderboard_leaderboardentry"]) == 2 and len(before["leaderboard_result"]) == 2

    args, env = _pg_env()
    dump = tmp_path / "pkb_arena.dump"
    subprocess.run(
        ["pg_dump", *args, "--format=custom", "--file", str(dump), connection.settings_dict["NAME"]],
        env=env,
        check=True,
        timeout=120,
    )
    fresh = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:8]}"
    subprocess.run(["createdb", *args, fresh], env=env, check=True, timeout=60)
    try:
        subprocess.run(
            ["pg_restore", *args, "--no-owner", "--exit-on-error", "--dbname", fresh, str(dump)],
            env=env,
            check=True,
            timeout=120,
        )
        assert rows(fresh) == before
    finally:
        subprocess.run(["dropdb", *args, "--if-exists", fresh], env=env, check=True, timeout=60)
