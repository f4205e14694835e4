"""Writes of submissions: an upload stored whole or not at all, and the owner's and staff's changes to it.

Services take plain values (``files`` as (path, bytes) pairs, never a request).
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from leaderboard.accounts.models import QuotaCharge, Submitter
from leaderboard.accounts.services import NotAllowed, quota_reserve
from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.jobs.models import EvaluationJob
from leaderboard.jobs.services import jobs_create, jobs_rerun
from leaderboard.submissions import uploads
from leaderboard.submissions.models import Candidate, Submission, Transcript
from leaderboard.submissions.signals import entry_stale, listing_changed, scores_stale

log = logging.getLogger("leaderboard.submissions.services")
QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE, EvaluationJob.FAILED)


def upload_limits() -> uploads.Limits:
    return uploads.Limits(
        max_total_bytes=settings.PKB_MAX_UPLOAD_BYTES,
        max_file_bytes=settings.PKB_MAX_FILE_BYTES,
        max_files=87 * settings.PKB_MAX_ATTEMPTS,
    )


def upload_members(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """(path, bytes) of an upload: one archive is unpacked, otherwise the files are the directory."""
    limits = upload_limits()
    total = sum(len(data) for _, data in files)
    if total > limits.max_total_bytes:
        raise uploads.UploadRejected(
            [
                uploads.UploadError(
                    "(upload)", "over_size", f"upload is {total:,} bytes; the limit is {limits.max_total_bytes:,} bytes"
                )
            ]
        )
    archives = [(name, data) for name, data in files if uploads.is_archive(name)]
    if archives and len(files) > 1:
        raise uploads.UploadRejected(
            [
                uploads.UploadError(
                    archives[0][0], "bad_layout", "send one archive, or the files of a directory, not both"
                )
            ]
        )
    if archives:
        return uploads.members_from_archive(archives[0][0], archives[0][1], limits)
    return files


def submission_create(
    submitter: Submitter, fields: dict, files: list[tuple[str, bytes]], allow_duplicate: bool = False
) -> Submission:
    """Validate an upload completely, then store it, charge the quota and queue its jobs in one transaction.

    Raises uploads.UploadRejected (nothing stored) or QuotaExceeded (nothing stored). Files identical to an earlier
    submission of the same submitter on the same profile are refused (rule "duplicate", naming it): re-run that one.
    allow_duplicate: the demo's --force and test set-ups that need several copies.
    """
    members = upload_members(files)
    stems = dict(Problem.objects.values_list("stem", "id"))
    parsed = uploads.parse(members, stems, upload_limits())
    open_profiles = {p.slug: p for p in HardwareProfile.objects.filter(accepting=True)}
    clean = uploads.clean_metadata(fields, parsed, settings.PKB_MAX_ATTEMPTS, set(open_profiles))
    profile = open_profiles[clean.pop("profile")]
    implemented = set(Problem.objects.filter(implemented=True).values_list("id", flat=True))
    judged = [f for f in parsed.files if f.problem_id in implemented]
    feedback_for = _feedback_target(submitter, fields.get("feedback_for"))
    digest = files_digest(parsed.files)
    with transaction.atomic():
        quota_reserve(submitter, len(judged))  # locks the submitter's row: two identical uploads serialise here
        if not allow_duplicate:
            _duplicate_check(submitter, profile, digest)
        submission = Submission.objects.create(
            submitter=submitter,
            profile=profile,
            archive_sha256=parsed.sha256,
            files_sha256=digest,
            feedback_for=feedback_for,
            **clean,
        )
        _candidates_and_jobs(submission, parsed.files, implemented)
        Transcript.objects.bulk_create(
            [
                Transcript(
                    submission=submission,
                    problem_id=t.problem_id,
                    attempt=t.attempt,
                    filename=t.path,
                    content=t.text,
                    steps=t.steps,
                    sha256=t.sha256,
                    size=t.size,
                )
                for t in parsed.transcripts
            ]
        )
        scores_stale.send(Submission, submission=submission, problem_ids=None)
    log.info(
        "submission %s by %s: %d files, %d jobs on %s",
        submission.pk,
        submitter,
        len(parsed.files),
        len(judged),
        profile.slug,
    )
    return submission


def files_digest(files) -> str:
    """One hash of an upload's candidates, whatever their order or the archive around them: sha256 over the sorted
    (problem, attempt, file sha256) lines."""
    lines = sorted(f"{f.problem_id}:{f.attempt}:{f.sha256}" for f in files)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _duplicate_check(submitter: Submitter, profile: HardwareProfile, digest: str) -> None:
    earlier = (
        Submission.objects.filter(submitter=submitter, profile=profile, files_sha256=digest)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    if earlier is not None:
        raise uploads.UploadRejected(
            [
                uploads.UploadError(
                    "(upload)",
                    "duplicate",
                    f"these files are identical to your submission #{earlier} on {profile.slug}: "
                    "re-run that one instead of uploading them again.",
                    url=f"/submissions/{earlier}/",
                )
            ]
        )  # the pages and pkb link the url once


def _feedback_target(submitter: Submitter, value) -> Submission | None:
    if value in (None, ""):
        return None
    target = Submission.objects.filter(
        pk=str(value).strip() if str(value).strip().isdigit() else -1, submitter=submitter
    ).first()
    if target is None:
        raise uploads.UploadRejected(
            [
                uploads.UploadError(
                    uploads.METADATA_FILE, "bad_metadata", f"feedback_for={value!r} is not one of your submissions"
                )
            ]
        )
    return target


def _candidates_and_jobs(submission: Submission, files: list[uploads.CandidateFile], implemented: set[int]) -> None:
    candidates = Candidate.objects.bulk_create(
        [
            Candidate(
                submission=submission,
                problem_id=f.problem_id,
                attempt=f.attempt,
                filename=f.path,
                backend=f.backend,
                code=f.code,
                sha256=f.sha256,
                size=f.size,
            )
            for f in files
        ]
    )
    queue = HardwareProfile.objects.values_list("slug", flat=True).get(pk=submission.profile_id)
    jobs = jobs_create(submission, [c for c in candidates if c.problem_id in implemented], queue)
    QuotaCharge.objects.bulk_create(
        [QuotaCharge(submitter_id=submission.submitter_id, job=j, run=1, created_at=j.enqueued_at) for j in jobs]
    )


def submission_publish(submission: Submission, user) -> None:
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner publishes a submission")
    if submission.visibility == "hidden":
        raise NotAllowed("hidden by staff")
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(
            visibility="public", published_at=timezone.now(), withdrawn_at=None
        )
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_withdraw(submission: Submission, user) -> None:
    """The owner takes a published submission off every leaderboard and export; its page, results, code and logs
    stay visible to the owner (and staff). Publishing it again lists it again."""
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner withdraws a submission")
    if submission.visibility != "public":
        raise NotAllowed(
            "only a published submission can be withdrawn"
            + ("; an unpublished one can be deleted" if submission.visibility == "private" else "")
        )
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(visibility="withdrawn", withdrawn_at=timezone.now())
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_delete(submission: Submission, user) -> int:
    """The owner deletes a submission that was never published, once none of its evaluations is queued or running
    (a worker may hold one). Its evaluations stay charged to the quota. Returns the deleted submission's id."""
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner deletes a submission")
    if submission.visibility != "private" or submission.published_at is not None:
        raise NotAllowed("a submission that was published cannot be deleted: withdraw it instead")
    pk = submission.pk
    with transaction.atomic():
        Submitter.objects.select_for_update().filter(pk=submission.submitter_id).first()
        if EvaluationJob.objects.filter(submission_id=pk, status__in=(QUEUED, RUNNING)).exists():
            raise NotAllowed("some of its evaluations are queued or running: delete it once they finish")
        Submission.objects.filter(pk=pk).delete()
    log.info("submission %s deleted by %s", pk, user)
    return pk


def submission_set_visibility(submission: Submission, visibility: str) -> None:
    """Staff: hide or restore (to private) a submission."""
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(visibility=visibility)
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_flag(submission: Submission, reason: str, flagged: bool = True) -> None:
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(flagged=flagged, flag_reason=reason[:300] if flagged else "")
        submission.refresh_from_db()
        entry_stale.send(Submission, submission=submission)


def submission_verify(submission: Submission, verified: bool = True) -> None:
    Submission.objects.filter(pk=submission.pk).update(verified=verified)


def _listing_refresh(submission: Submission) -> None:
    listing_changed.send(Submission, submission=submission)


def jobs_create_missing() -> int:
    """Jobs for candidates whose problem was not implemented when they were uploaded (free: never charged)."""
    created = 0
    waiting = Candidate.objects.filter(problem__implemented=True, jobs__isnull=True).select_related(
        "submission__profile"
    )
    for candidate in waiting:
        submission = candidate.submission
        with transaction.atomic():
            jobs_create(submission, [candidate], submission.profile.queue_name)
            scores_stale.send(Submission, submission=submission, problem_ids=[candidate.problem_id])
        created += 1
    return created


def submission_rerun(submission: Submission, user, only_failed: bool = False) -> int:
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner or staff re-run a submission")
    jobs = submission.jobs.filter(status=FAILED) if only_failed else submission.jobs.filter(status__in=(DONE, FAILED))
    charge = None if user.is_staff else submission.submitter
    return jobs_rerun(list(jobs.select_related("candidate")), charge)
