"""Server time of the site's pages with a large database: 1,000 submissions x 87 problems x 3 attempts in PostgreSQL.

    .venv/bin/python benchmarks/site_pages.py [--submissions 1000] [--requests 40] [--reuse]
        [--database-url postgres://postgres@127.0.0.1:5432/pkb_arena_bench]

Seeds (unless --reuse finds the data already there) 1,000 published submissions, each with 3 attempts at every one of
the 87 problems: 261,000 candidates, jobs, results and quota charges, 87,000 problem scores, 1,000 leaderboard
entries. Then requests each page in-process through Django's test client (no network, DEBUG off) and prints p50/p95
of the server time and the number of SQL queries per page. Target: p95 < 100 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/pkb_arena_bench"
BATCH = 25  # submissions per bulk insert round


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page (after 3 warm-ups)")
    parser.add_argument("--database-url", default=os.environ.get("PKB_BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--reuse", action="store_true", help="keep the data if the database already holds it")
    return parser.parse_args()


def create_database(url: str) -> None:
    from urllib.parse import urlsplit

    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark")
    os.environ["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    import django

    django.setup()
    from django.core.management import call_command

    # The pages name their static files through the manifest, as in production: collect them first.
    call_command("collectstatic", "--noinput", verbosity=0)


def seed(n_submissions: int, k: int) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    import problems
    from leaderboard.accounts import services as accounts_services
    from leaderboard.accounts.models import QuotaCharge
    from leaderboard.catalogue import services as catalogue_services
    from leaderboard.catalogue.models import HardwareProfile
    from leaderboard.jobs.models import EvaluationJob, Result
    from leaderboard.scoring import services as scoring_services
    from leaderboard.scoring.models import ProblemScore
    from leaderboard.submissions.models import Candidate, Submission

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:  # start from empty tables
        cursor.execute(
            "TRUNCATE leaderboard_submission, leaderboard_submitter, leaderboard_problem, "
            "leaderboard_hardwareprofile, auth_user CASCADE"
        )
    catalogue_services.profiles_ensure_defaults()
    HardwareProfile.objects.filter(slug="gpu-h200x8").update(accepting=True)
    catalogue_services.problems_load(problems.catalogue(), dict(problems.registry()))
    profile = HardwareProfile.objects.get(slug="gpu-h200x8")
    problem_ids = list(range(1, 88))
    rng = random.Random(1234)
    users = [get_user_model().objects.create_user(username=f"bench{i}") for i in range(50)]
    submitters = [accounts_services.submitter_for(u) for u in users]
    document = {
        "schema": 1,
        "verdict": "correct",
        "message": "benchmark row",
        "flags": [],
        "environment": {
            "host": "h200-01",
            "gpus": ["NVIDIA H200"] * 8,
            "driver": "570.86",
            "torch": "2.11.0",
            "nccl": "2.26",
            "backend": "nccl",
        },
        "logs": [],
    }
    code = "import torch\n\ndef solution(*inputs):\n    return inputs[0]\n"
    started = time.monotonic()
    now = timezone.now()
    for start in range(0, n_submissions, BATCH):
        with transaction.atomic():
            subs = Submission.objects.bulk_create(
                [
                    Submission(
                        submitter=rng.choice(submitters),
                        profile=profile,
                        model_name=f"model-{i:04d}",
                        agent=rng.choice(["harness-a", "harness-b", "harness-c"]),
                        agent_version="1.0",
                        backend=rng.choice(["cuda", "triton"]),
                        protocol="best_of_k" if i % 10 < 7 else "agentic_feedback",
                        attempts_k=k,
                        selection_rule="best_measured" if i % 10 < 7 else "last",
                        visibility="public",
                        reported_tokens=rng.randint(10**5, 10**7),
                        published_at=now,
                    )
                    for i in range(start, min(start + BATCH, n_submissions))
                ]
            )
            skill = {s.pk: rng.random() for s in subs}
            candidates = Candidate.objects.bulk_create(
                [
                    Candidate(
                        submission=s,
                        problem_id=pid,
                        attempt=a,
                        filename=f"attempt_{a}/{pid}_x_cuda.py",
                        backend=s.backend,
                        code=code,
                        sha256="0" * 64,
                        size=len(code),
                    )
                    for s in subs
                    for pid in problem_ids
                    for a in range(1, k + 1)
                ],
                batch_size=5000,
            )
            by_id = {s.pk: s for s in subs}
            jobs = EvaluationJob.objects.bulk_create(
                [
                    EvaluationJob(
                        candidate=c,
                        profile=profile,
                        submission_id=c.submission_id,
                        submitter_id=by_id[c.submission_id].submitter_id,
                        status="done",
                        attempts=1,
                        finished_at=now,
                    )
                    for c in candidates
                ],
                batch_size=5000,
            )
            QuotaCharge.objects.bulk_create(
                [QuotaCharge(submitter_id=j.submitter_id, job=j, run=1) for j in jobs], batch_size=5000
            )
            results = []
            for job in jobs:
                correct = rng.random() < 0.25 + 0.6 * skill[job.submission_id]
                speedup = rng.lognormvariate(0.0, 0.5) if correct else None
                results.append(
                    Result(
                        job=job,
                        run=1,
                        verdict="correct"
                        if correct
                        else rng.choice(["incorrect", "runtime_error", "compile_error", "timeout"]),
                        speedup=speedup,
                        speedup_lo=speedup * 0.93 if speedup else None,
                        speedup_hi=speedup * 1.07 if speedup else None,
                        faster=bool(speedup and speedup * 0.93 > 1.0),
                        wall_s=30.0,
                        gpu_seconds=240.0,
                        document=document,
                        flags=["timing_crosscheck"] if rng.random() < 0.002 else [],
                    )
                )
            Result.objects.bulk_create(results, batch_size=5000)
            attempts: dict = {}
            for c, j, r in zip(candidates, jobs, results, strict=False):
                attempts.setdefault((c.submission_id, c.problem_id), []).append(
                    {"attempt": c.attempt, "job": j, "result": r}
                )
            scores = []
            for (sid, pid), rows in attempts.items():
                score = ProblemScore(submission=by_id[sid], problem_id=pid)
                scoring_services._score_fill(score, by_id[sid], rows, ranked=True)
                scores.append(score)
            ProblemScore.objects.bulk_create(scores, batch_size=5000)
            for s in subs:
                scoring_services.entry_refresh(s)
        done = min(start + BATCH, n_submissions)
        print(f"\rseeded {done}/{n_submissions} submissions ({time.monotonic() - started:.0f} s)", end="", flush=True)
    print()
    for protocol in ("best_of_k", "agentic_feedback"):
        scoring_services.problem_stats_refresh(problem_ids, profile.pk, protocol)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure(requests: int) -> list[tuple[str, list[float], int]]:
    from django.db import connection
    from django.test import Client

    from leaderboard.submissions.models import Submission

    sample = Submission.objects.order_by("pk")[Submission.objects.count() // 2]
    pages = [
        ("leaderboard (3 protocol tables)", "/leaderboard/gpu-h200x8/"),
        ("leaderboard, one protocol, page 5", "/leaderboard/gpu-h200x8/?protocol=best_of_k&page=5"),
        ("leaderboard filtered (backend, k)", "/leaderboard/gpu-h200x8/?backend=cuda&k=3&sort=faster"),
        ("problems index + heatmap", "/problems/?profile=gpu-h200x8"),
        ("problem drill-down + strip plot", "/problems/13_gemm_allreduce/?profile=gpu-h200x8"),
        ("submission page (87 x 3)", f"/submissions/{sample.pk}/"),
        ("submission status.json", f"/submissions/{sample.pk}/status.json"),
        ("API leaderboard (50 rows/protocol)", "/api/v1/leaderboard/gpu-h200x8/"),
        ("API leaderboard (limit=500, the most)", "/api/v1/leaderboard/gpu-h200x8/?limit=500"),
        ("API problem", "/api/v1/problems/13_gemm_allreduce/?profile=gpu-h200x8"),
        ("CSV export, whole leaderboard", "/leaderboard/gpu-h200x8/?format=csv"),
    ]
    client = Client()
    out = []
    for name, url in pages:
        for _ in range(3):
            assert client.get(url).status_code == 200, url
        queries = []
        with connection.execute_wrapper(
            lambda execute, sql, params, many, context, queries=queries: (
                queries.append(sql),
                execute(sql, params, many, context),
            )[1]
        ):
            client.get(url)
        times, cpu = [], []
        for _ in range(requests):
            began, began_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            times.append((time.perf_counter() - began) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
            assert response.status_code == 200
        out.append((name, times, len(queries), statistics.median(cpu)))
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    args = parse_args()
    create_database(args.database_url)
    setup_django(args.database_url)
    from django.core.management import call_command

    from leaderboard.submissions.models import Candidate, Submission

    call_command("migrate", verbosity=0)
    expected = args.submissions * 87 * args.attempts
    if not (args.reuse and Submission.objects.count() == args.submissions and Candidate.objects.count() == expected):
        seed(args.submissions, args.attempts)
    else:
        from leaderboard.catalogue.models import HardwareProfile
        from leaderboard.scoring import services as scoring_services

        profile = HardwareProfile.objects.get(slug="gpu-h200x8")
        for protocol in ("best_of_k", "agentic_feedback"):
            scoring_services.problem_stats_refresh(range(1, 88), profile.pk, protocol)
    print(
        f"data: {Submission.objects.count()} submissions, {Candidate.objects.count()} candidates "
        f"(= jobs = results), PostgreSQL {args.database_url.rsplit('/', 1)[-1]}"
    )
    rows = measure(args.requests)
    load = os.getloadavg()[0]
    print(f"{'page':<40} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'cpu p50':>8}")
    worst = 0.0
    for name, times, queries, cpu in rows:
        p95 = percentile(times, 95)
        worst = max(worst, p95)
        print(f"{name:<40} {statistics.median(times):8.1f} {p95:8.1f} {queries:8d} {cpu:8.1f}")
    print(
        f"worst p95: {worst:.1f} ms (target < 100 ms): {'OK' if worst < 100 else 'OVER'}; load average "
        f"{load:.1f} on {os.cpu_count()} cores (wall times include waiting for a busy CPU; 'cpu' is this "
        f"process's CPU time per request, without PostgreSQL's)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
