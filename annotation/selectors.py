"""Reads for the annotation app: what the pages and the API show, computed in few queries."""

from __future__ import annotations

import statistics

from django.db import connections
from django.db.models import CharField, Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Cast, Concat
from django.urls import reverse
from django.utils import timezone

from common.blind import letter_of, letter_token
from common.loudness import PEAK_CEILING_DBTP
from common.precompiled import PreparedSQL
from common.roles import is_admin, is_researcher

from .models import AnnotatorProfile, Assignment, Clip, Condition, Judgment, Pair, Study, StudyAnnotator, StudyExport


def _assigned_clip_sql(connection) -> str:
    q = connection.ops.quote_name
    return (
        f"SELECT 1 FROM {q(Assignment._meta.db_table)} a INNER JOIN {q(Pair._meta.db_table)} p ON a.{q('pair_id')} = p.{q('id')}"
        f" LEFT OUTER JOIN {q(Condition._meta.db_table)} c ON p.{q('condition_id')} = c.{q('id')}"
        f" WHERE a.{q('annotator_id')} = %s AND (p.{q('clip_a_id')} = %s OR p.{q('clip_b_id')} = %s OR c.{q('reference_id')} = %s) LIMIT 1"
    )


# Every audio GET of the judgment cycle asks this; built once per process (common.precompiled).
_ASSIGNED_CLIP = PreparedSQL(_assigned_clip_sql)


def clip_assigned_to(*, user, clip: Clip) -> bool:
    """Whether the clip is one of a pair (or its reference) assigned to the user: the first question of the clip rule
    (annotation.access.clip_audible_by), answered without reading the roles."""
    return _ASSIGNED_CLIP.first(connections[Assignment.objects.db], [user.pk, clip.pk, clip.pk, clip.pk]) is not None


# --- Annotators ----------------------------------------------------------------------


def profile_for(*, user) -> AnnotatorProfile | None:
    return AnnotatorProfile.objects.filter(user=user).first()


def has_consented(*, user) -> bool:
    profile = profile_for(user=user)
    return profile is not None and profile.has_consented


def is_active_member(*, study: Study, user) -> bool:
    return StudyAnnotator.objects.filter(study=study, annotator=user, is_active=True).exists()


def judgment_count(*, user) -> int:
    return Judgment.objects.filter(annotator=user).count()


def studies_of(*, user) -> QuerySet[Study]:
    """Every study the user was ever added to, active or not (the consent page names them)."""
    return Study.objects.filter(memberships__annotator=user).distinct().order_by("name")


def studies_open_to(*, user) -> QuerySet[Study]:
    """Open studies the user is an active annotator of."""
    return Study.objects.filter(memberships__annotator=user, memberships__is_active=True, is_active=True).order_by("name")


# What every analysis says of the demo's seeded votes when it leaves them out (exports, reports, runs, reward training).
SEEDED_LEFT_OUT = "seeded demo votes"


def judgments_without_seeded(judgments: QuerySet[Judgment]) -> QuerySet[Judgment]:
    """The votes an analysis counts by default: the demo's seeded votes (made up, no one listened) are left out,
    as exports leave them out unless asked for them."""
    return judgments.exclude(source=Judgment.Source.SEEDED)


def pairs_left_for(*, study: Study, annotator, now=None, reserved: bool | None = None) -> int:
    """Pairs this annotator can still be given here: a live reservation, plus pairs with room
    they have neither judged nor skipped (the same content judged elsewhere counts as judged).

    Mirrors the assignment engine's candidate rules (services/assignment.py) as one count.
    `reserved`: whether they hold a live reservation here, when the caller knows.
    """
    now = now or timezone.now()
    if not study.is_active:
        return 0
    live = Q(state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
    mine = Assignment.objects.filter(annotator=annotator, pair__study=study)
    if reserved is None:
        reserved = mine.filter(live).exists()
    content_key = Concat(Cast("condition_id", CharField()), Value("/"), "clip_key", output_field=CharField())
    judged_content = (
        Judgment.objects.filter(annotator=annotator)
        .annotate(content=Concat(Cast("pair__condition_id", CharField()), Value("/"), "pair__clip_key", output_field=CharField()))
        .values("content")
    )
    open_pairs = (
        Pair.objects.filter(study=study)
        .exclude(id__in=mine.exclude(state=Assignment.State.EXPIRED).values("pair_id"))
        .annotate(content=content_key)
        .exclude(content__in=judged_content)
        .annotate(
            load=Count("judgments", distinct=True)
            + Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE, assignments__lock_expires_at__gt=now), distinct=True)
        )
        .filter(load__lt=F("overlap"))
        .count()
    )
    return open_pairs + int(reserved)


def annotator_progress(*, study: Study, annotator, now=None) -> dict:
    """The one account of an annotator's progress that the home page and the listening page show.

    Rating studies (acr, multi) count rated items (`unit` "clips" or "sets"); pair studies count
    judged pairs (`pair_progress`).
    """
    if hasattr(study, "rating_task"):
        from .ratings.selectors import rating_progress

        return rating_progress(study=study, annotator=annotator, now=now)
    return pair_progress(study=study, annotator=annotator, now=now)


def pair_progress(
    *, study: Study, annotator, now=None, done: int | None = None, planned: int | None = None, reserved: bool | None = None, recent: bool = False
) -> dict:
    """An annotator's progress in a pair study.

    `target` is what they can reach: the study's per-annotator target (or its pair count),
    lowered to what is judged plus what is still open to them (pairs already filled by others
    are not), so "all done" and "3 of 3" agree. `state` is "open", "finished" (nothing left for
    them) or "closed". The next-pair request passes what the engine already counted (`done`,
    `planned`, `reserved`) and `recent=True`: the open pairs as counted within the last minute (by the home
    page or an earlier pair) stand, less what was judged since, so the hot path adds no query.
    """
    from . import cached

    if done is None:
        done = Judgment.objects.filter(pair__study=study, annotator=annotator).count()
    if planned is None:
        planned = study.annotator_target or study.pairs.count()
    reachable = cached.reachable_get(study.pk, annotator.pk) if recent and study.is_active else None
    if reachable is None:
        left = pairs_left_for(study=study, annotator=annotator, now=now, reserved=reserved)
        cached.reachable_set(study.pk, annotator.pk, done + left)
    else:
        left = max(0, reachable - done)
    if study.annotator_target:
        left = min(left, max(0, study.annotator_target - done))
    target = max(done, min(planned, done + left))
    state = "closed" if not study.is_active else ("open" if left > 0 else "finished")
    return {"done": done, "target": target, "planned": max(planned, done), "left": left, "state": state, "unit": "pairs"}


def annotator_home_studies(*, user, now=None) -> list[dict]:
    """The annotator's open studies with their progress and whether a pair is reserved for them right now."""
    now = now or timezone.now()
    # The rating task comes along: progress asks each study whether it is a rating study.
    memberships = (
        StudyAnnotator.objects.filter(annotator=user, is_active=True, study__is_active=True)
        .select_related("study", "study__rating_task")
        .order_by("study__name")
    )
    live = set(Assignment.objects.filter(annotator=user, state=Assignment.State.ACTIVE, lock_expires_at__gt=now).values_list("pair__study_id", flat=True))
    studies = []
    for membership in memberships:
        progress = annotator_progress(study=membership.study, annotator=user, now=now)
        studies.append(
            {
                "study": membership.study,
                "progress": progress,
                "percent": round(100 * progress["done"] / progress["target"]) if progress["target"] else 0,
                "finished": progress["state"] != "open",
                "in_progress": membership.study_id in live,
            }
        )
    return studies


def home_sections(*, user) -> dict:
    """Which parts of the home page a user gets: their annotation tasks, their studies as a researcher, or both.

    Researchers are not annotators unless a study lists them: they never see the consent prompt.
    Staff (admins, superusers, is_staff) see both, since they do both jobs.
    """
    researcher = is_researcher(user)
    staff = is_admin(user) or bool(getattr(user, "is_staff", False))
    member = StudyAnnotator.objects.filter(annotator=user).exists()
    return {"tasks": member or staff or not researcher, "research": researcher, "member": member, "staff": staff}


def researcher_home_studies(*, user) -> QuerySet[Study]:
    """A researcher's own studies with their counts; an admin's: every study."""
    studies = studies_with_counts()
    return studies if is_admin(user) else studies.filter(owner=user)


def assignment_with_content(*, assignment_id: int, study: Study) -> Assignment:
    """An assignment with its pair's condition, reference and clips, ready to show."""
    assignment = Assignment.objects.select_related("pair__condition__reference", "pair__clip_a", "pair__clip_b").get(pk=assignment_id)
    # The study is in hand; one join fewer keeps the planner's search small on this hot path.
    assignment.pair.study = study
    return assignment


# --- The pair page's audio URLs ------------------------------------------------------
# One URL per assignment and side (and the condition's reference): the same clip in another pair, or at its
# public /audio/ URL, has another URL and another ETag, so nothing the page is given links a side to a clip elsewhere.
PAIR_AUDIO_SALT = "annotation.pair-audio"
PAIR_REFERENCE = "ref"


def pair_audio_path(*, assignment_id: int, label: str) -> str:
    return reverse("pair-audio", kwargs={"token": letter_token(salt=PAIR_AUDIO_SALT, assignment_id=assignment_id, label=label)})


def pair_audio_clip(*, token: str, user) -> Clip | None:
    """The clip an assignment's side URL serves, for the assignment's own annotator only (anyone else: None)."""
    found = letter_of(salt=PAIR_AUDIO_SALT, token=token)
    if found is None or not getattr(user, "is_authenticated", False):
        return None
    assignment_id, label = found
    assignment = Assignment.objects.select_related("pair__clip_a", "pair__clip_b", "pair__condition__reference").filter(pk=assignment_id, annotator_id=user.pk).first()
    if assignment is None:
        return None
    pair = assignment.pair
    a_clip = pair.clip_a if assignment.a_clip_id == pair.clip_a_id else pair.clip_b
    return {"A": a_clip, "B": pair.clip_b if a_clip is pair.clip_a else pair.clip_a, PAIR_REFERENCE: pair.condition.reference}.get(label)


# --- Researchers ---------------------------------------------------------------------


def studies_with_counts() -> QuerySet[Study]:
    # n_pairs is the study's own column (kept by triggers).
    return Study.objects.annotate(
        n_annotators=Count("memberships", filter=Q(memberships__is_active=True), distinct=True),
        n_judgments=Count("pairs__judgments", distinct=True),
    ).order_by("name")


def study_annotator_rows(*, study: Study, now=None) -> list[dict]:
    """Progress per annotator: done / target, skips, live locks, median time on page."""
    now = now or timezone.now()
    memberships = StudyAnnotator.objects.filter(study=study).select_related("annotator", "annotator__annotator_profile").order_by("annotator__username")
    target_default = study.annotator_target or study.pairs.count()
    times: dict[int, list[int]] = {}
    done: dict[int, int] = {}
    for annotator_id, ms in Judgment.objects.filter(pair__study=study).values_list("annotator_id", "time_on_page_ms"):
        done[annotator_id] = done.get(annotator_id, 0) + 1
        if ms is not None:
            times.setdefault(annotator_id, []).append(ms)
    states = {
        row["annotator_id"]: row
        for row in Assignment.objects.filter(pair__study=study)
        .values("annotator_id")
        .annotate(
            skipped=Count("id", filter=Q(state=Assignment.State.SKIPPED)),
            live=Count("id", filter=Q(state=Assignment.State.ACTIVE, lock_expires_at__gt=now)),
        )
    }
    rows = []
    for membership in memberships:
        user = membership.annotator
        profile = getattr(user, "annotator_profile", None)
        n_done = done.get(user.pk, 0)
        median_ms = statistics.median(times[user.pk]) if user.pk in times else None
        rows.append(
            {
                "username": user.username,
                "pseudonym": profile.pseudonym if profile else "",
                "consented": bool(profile and profile.has_consented),
                "withdrawn": bool(profile and profile.withdrawn_at),
                "active": membership.is_active,
                "done": n_done,
                "target": max(target_default, n_done),
                "skipped": states.get(user.pk, {}).get("skipped", 0),
                "live": states.get(user.pk, {}).get("live", 0),
                "median_seconds": None if median_ms is None else median_ms / 1000,
            }
        )
    return rows


def study_pairs_with_load(*, study: Study, now=None) -> QuerySet[Pair]:
    """The study's pairs in id order, each with its votes, live locks and skips."""
    now = now or timezone.now()
    return (
        Pair.objects.filter(study=study)
        .select_related("condition")
        .annotate(
            votes=Count("judgments", distinct=True),
            live=Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE, assignments__lock_expires_at__gt=now), distinct=True),
            skips=Count("assignments", filter=Q(assignments__state=Assignment.State.SKIPPED), distinct=True),
        )
        .order_by("id")
    )


def study_totals(*, study: Study, now=None) -> dict:
    now = now or timezone.now()
    pairs = study.pairs.aggregate(n=Count("id"), wanted=Sum("overlap"))
    return {
        "pairs": pairs["n"] or 0,
        "votes_wanted": pairs["wanted"] or 0,
        "judgments": Judgment.objects.filter(pair__study=study).count(),
        "live_locks": Assignment.objects.filter(pair__study=study, state=Assignment.State.ACTIVE, lock_expires_at__gt=now).count(),
        "skips": Assignment.objects.filter(pair__study=study, state=Assignment.State.SKIPPED).count(),
    }


# --- Loudness-matched playback ---------------------------------------------------------------


def study_clips(*, study: Study) -> QuerySet[Clip]:
    """Every clip a page of the study can play: its pairs' clips, rating items' clips, practice pairs' clips and
    the references of their conditions."""
    from .crowd_models import PracticeItem
    from .ratings.models import RatingItem, RatingItemClip

    pairs = Pair.objects.filter(study=study)
    practice = PracticeItem.objects.filter(study=study)
    in_study = (
        Q(pk__in=pairs.values("clip_a"))
        | Q(pk__in=pairs.values("clip_b"))
        | Q(pk__in=pairs.values("condition__reference"))
        | Q(pk__in=RatingItemClip.objects.filter(item__study=study).values("clip"))
        | Q(pk__in=RatingItem.objects.filter(study=study).values("condition__reference"))
        | Q(pk__in=practice.values("clip_a"))
        | Q(pk__in=practice.values("clip_b"))
        | Q(pk__in=practice.values("condition__reference"))
    )
    return Clip.objects.filter(in_study)


def study_loudness(*, study: Study) -> dict:
    """What the study page says of loudness matching: the setting, and how many of its clips were never measured
    (they play as stored until `manage.py backfill_loudness` measures them)."""
    clips = study_clips(study=study)
    return {
        "match": study.loudness_match,
        "target_lufs": study.loudness_target_lufs,
        "ceiling_dbtp": PEAK_CEILING_DBTP,
        "unmeasured": clips.filter(loudness_measured_at__isnull=True).count(),
        "unmeasurable": clips.filter(loudness_measured_at__isnull=False, loudness_lufs__isnull=True).count(),
        "changed_at": study.loudness_changed_at,
    }


def study_writable_by(*, study: Study, user) -> bool:
    """The one rule for every change to a study (parameters, annotators, imports, training on its votes):
    its owner, the collaborators the owner names, and admins."""
    if is_admin(user):
        return True
    if not is_researcher(user) or study.pk is None:
        return False
    return study.owner_id == user.pk or study.collaborators.filter(pk=user.pk).exists()


def study_importable_by(*, study: Study, user) -> bool:
    return study_writable_by(study=study, user=user)


def study_exportable_by(*, study: Study, user) -> bool:
    """Who may take a study's data out in the browser: its owner and admins (the same people who may import into it)."""
    return study_importable_by(study=study, user=user)


def study_export_latest(*, study: Study, user) -> StudyExport | None:
    return StudyExport.objects.filter(study=study, requested_by=user).exclude(options__has_key="via").first()


def _export_summary(options: dict) -> str:
    if options.get("balanced_test"):
        split = f"balanced test split of {options['balanced_test']} pairs (seed {options.get('seed')})"
    else:
        split = "split as stored"
    return (
        split
        + (", pairs without votes included" if options.get("include_unvoted") else "")
        + (", seeded demo votes included" if options.get("include_seeded") else "")
    )


def study_export_status(*, export: StudyExport) -> dict:
    """What the study page shows and polls while an export is built."""
    return {
        "summary": _export_summary(export.options or {}),
        "id": str(export.public_id),
        "state": export.state,
        "label": export.get_state_display(),
        "step": export.step,
        "done": export.done,
        "total": export.total,
        "message": export.message,
        "size_bytes": export.size_bytes,
        "options": export.options,
    }


def studies_importable_by(*, user) -> QuerySet[Study]:
    """The studies this user may change (and so import into)."""
    if is_admin(user):
        return Study.objects.order_by("name")
    if not is_researcher(user):
        return Study.objects.none()
    return Study.objects.filter(Q(owner=user) | Q(collaborators=user)).distinct().order_by("name")


def study_collaborators_editable_by(*, study: Study, user) -> bool:
    """Only the owner (and admins) name the collaborators."""
    return is_admin(user) or (is_researcher(user) and study.owner_id is not None and study.owner_id == user.pk)


def uploads_allowed(*, user, path: str) -> bool:
    """Whether a request to this upload path may carry a dataset-sized body (common/limits.py asks before reading it).

    The admin import: staff allowed to add pairs, clips and judgments. The researchers' import: anyone with a study to import into.
    """
    if path.startswith("/admin/"):
        return bool(user.is_staff) and (is_admin(user) or user.has_perms(["annotation.add_pair", "annotation.add_judgment", "annotation.add_clip"]))
    return studies_importable_by(user=user).exists()


def study_system_names(*, study: Study) -> list[str]:
    """The systems whose clips the study plays, in a pair or a rating item."""
    from .ratings.models import RatingItemClip

    paired = Clip.objects.filter(Q(pairs_as_a__study=study) | Q(pairs_as_b__study=study))
    rated = Clip.objects.filter(pk__in=RatingItemClip.objects.filter(item__study=study).values("clip_id"))
    names = set(paired.exclude(system=None).values_list("system__name", flat=True)) | set(rated.exclude(system=None).values_list("system__name", flat=True))
    return sorted(names)
