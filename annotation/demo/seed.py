"""Seeding the database: the demo study, its pairs (some gold), the demo accounts and their seeded votes."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from ..models import Clip, Pair, Study, StudyAnnotator, System
from ..services import clip_ingest_array, condition_get_or_create, consent_give, pair_get_or_create, profile_ensure, study_annotator_add
from .catalogue import CLEAN_SYSTEM, DEMO_CONDITIONS, DEMO_SYSTEMS, SYSTEM_NAMES
from .synth import render, render_reference
from .votes import demo_votes_seed

DEMO_STUDY = "demo"
DEMO_SEED_SECONDS = 6.0
DEMO_SAMPLE_RATE = 22050

STUDY_INSTRUCTIONS = """\
Each task shows one request for a piece of music (a text description, and sometimes lyrics and a
reference recording) and two clips, A and B, made by two systems whose names stay hidden.

1. Read the request first. If there is a reference recording, listen to it: it shows the style
   wanted, it is not one of the answers.
2. Listen to both clips, at least 5 seconds each; switch between them as often as you like.
3. Instruction following: pick the clip that does what was asked (instruments, mood, genre,
   tempo, the lyrics, the reference's style), however good or bad it sounds.
4. Musicality: pick the clip that sounds more like finished, natural music, whatever was asked:
   melody, structure, steady rhythm, clean production without distortion, noise or dropouts,
   natural singing.
5. For each choice, say how sure you are: 5 = one clearly meets it and the other clearly fails,
   3 = a clear lean, 1 = you cannot tell them apart.
6. In one to three short sentences, say what you heard, with times where you can
   ("B drifts off the beat at 0:03", "A is noisy throughout").

The two choices are separate on purpose: a clip may follow the request better and still sound
worse. If a clip does not play or something else is wrong, skip the pair and say why.
"""

# Degraded-vs-degraded pairs, taken in turn so every system meets several others.
_DEGRADED_PAIRS = [
    ("hiss", "clipper"),
    ("detune", "draggy"),
    ("wobble", "hiss"),
    ("clipper", "detune"),
    ("draggy", "wobble"),
    ("hiss", "detune"),
    ("wobble", "clipper"),
    ("draggy", "hiss"),
]
# (condition key, degraded system): pairs with a known answer, aurora on both dimensions.
_GOLD = {("demo-01", "clipper"), ("demo-05", "hiss")}

USERS = (
    # username, password, superuser, groups
    ("admin", "admin", True, ("admin", "researcher")),
    ("researcher", "researcher", False, ("researcher",)),
)
ANNOTATORS = (("annotator1", "annotator"), ("annotator2", "annotator"), ("annotator3", "annotator"))
# The seeded votes' authors: accounts of their own that cannot sign in, with consent recorded before
# their first vote, so a demo annotator's progress counts only what they judged themselves and no
# seeded vote is attributed to an annotator whose consent is pending.
SEEDED_VOTERS = ("demo-voter1", "demo-voter2", "demo-voter3")


def _demo_pairs(index: int) -> list[tuple[str, str]]:
    """Screen order as stored (A, B) for condition `index`: aurora against each degraded system, plus a few others."""
    degraded = [s for s in SYSTEM_NAMES if s != CLEAN_SYSTEM]
    pairs = []
    for j, name in enumerate(degraded):
        # Alternate which side aurora is stored on, so nothing downstream can rely on "A is the good one".
        pairs.append((CLEAN_SYSTEM, name) if (index + j) % 2 == 0 else (name, CLEAN_SYSTEM))
    picks = [index % len(_DEGRADED_PAIRS), (index + 3) % len(_DEGRADED_PAIRS)]
    if index % 2 == 0:
        picks.append((index + 5) % len(_DEGRADED_PAIRS))
    for k in picks:
        a, b = _DEGRADED_PAIRS[k]
        pairs.append((a, b) if index % 2 == 0 else (b, a))
    return pairs


def _ensure_user(username: str, password: str, *, superuser: bool = False, groups=()):
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        if superuser:
            user = User.objects.create_superuser(username=username, email="", password=password)
        else:
            user = User.objects.create_user(username=username, password=password)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def seeded_voter(study: Study, username: str):
    """An account that holds seeded votes: no password, consent recorded before its votes, an inactive
    membership (the study page lists it, the assignment engine never serves it)."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username)
        user.set_unusable_password()
        user.save()
    profile = profile_ensure(user=user, pseudonym=username)
    if not profile.has_consented:
        consent_give(user=user, version="seeded-demo")
    StudyAnnotator.objects.get_or_create(study=study, annotator=user, defaults={"seed": 0, "is_active": False})
    return user


def seed_demo(*, force: bool = False):
    """Fill an empty database with a ready-to-annotate demo study; returns it, or None if studies exist.

    Every object is looked up before it is made (clips by content hash, conditions by content,
    pairs by their clips), so running it again, with or without `force`, adds nothing.
    """
    if Study.objects.exists() and not force:
        return None

    with transaction.atomic():
        systems = {}
        for spec in DEMO_SYSTEMS:
            systems[spec.name], _ = System.objects.get_or_create(
                name=spec.name, defaults={"organisation": spec.organisation, "description": spec.description}
            )

        study, _ = Study.objects.get_or_create(
            name=DEMO_STUDY,
            defaults={
                "title": "Demo study",
                "instructions": STUDY_INSTRUCTIONS,
                "overlap_target": 3,
                "overlap_share": 0.5,
                "min_listen_seconds": 5,
                "rationale_min_length": 10,
                "gold_rate": 0.1,
            },
        )

        def demo_clip(*, original_name: str, make, system=None, kind=Clip.Kind.GENERATED) -> Clip:
            # A clip seeded before is found by its name, so a forced re-run renders nothing;
            # new audio is still deduplicated by content hash on ingest.
            found = Clip.objects.filter(original_name=original_name, system=system, kind=kind).order_by("id").first()
            if found is not None:
                return found
            return clip_ingest_array(audio=make(), sample_rate=DEMO_SAMPLE_RATE, system=system, kind=kind, original_name=original_name)[0]

        for index, spec in enumerate(DEMO_CONDITIONS):
            reference = None
            if spec.has_reference:
                reference = demo_clip(
                    original_name=f"demo/reference/{spec.key}.flac",
                    kind=Clip.Kind.REFERENCE,
                    make=lambda: render_reference(prompt=spec.prompt, seed=index, seconds=DEMO_SEED_SECONDS, sample_rate=DEMO_SAMPLE_RATE),
                )
            condition, _ = condition_get_or_create(prompt=spec.prompt, lyrics=spec.lyrics, reference=reference, external_id=spec.key)
            clips = {
                name: demo_clip(
                    original_name=f"demo/{name}/{spec.key}.flac",
                    system=systems[name],
                    make=lambda name=name: render(
                        name, prompt=spec.prompt, lyrics=spec.lyrics, seed=index, seconds=DEMO_SEED_SECONDS, sample_rate=DEMO_SAMPLE_RATE
                    ),
                )
                for name in SYSTEM_NAMES
            }
            for a, b in _demo_pairs(index):
                degraded = b if a == CLEAN_SYSTEM else a
                gold = CLEAN_SYSTEM in (a, b) and (spec.key, degraded) in _GOLD
                pair_get_or_create(
                    study=study,
                    condition=condition,
                    clip_a=clips[a],
                    clip_b=clips[b],
                    split=spec.split,
                    kind=Pair.Kind.GOLD if gold else Pair.Kind.REGULAR,
                    expected_alignment=clips[CLEAN_SYSTEM] if gold else None,
                    expected_musicality=clips[CLEAN_SYSTEM] if gold else None,
                )

        users = {username: _ensure_user(username, password, superuser=superuser, groups=groups) for username, password, superuser, groups in USERS}
        if study.owner_id is None:
            # The demo researcher owns the demo study, so the researcher's import page works out of the box.
            study.owner = users["researcher"]
            study.save(update_fields=["owner"])
        annotators = []
        for username, password in ANNOTATORS:
            # Consent is left for the annotator to give: the consent page is the first thing they see.
            annotators.append(_ensure_user(username, password))
            study_annotator_add(study=study, user=annotators[-1])
        # A few labelled, seeded answers (source "seeded": demo data), so the report's judge-versus-human
        # sections have something to show when asked to include them.
        voters = [seeded_voter(study, username) for username in SEEDED_VOTERS]
        demo_votes_seed(study=study, annotators=voters)
        # The same clips as rating studies (acr and multi-stimulus), with seeded ratings of their own.
        from annotation.ratings.demo import demo_rating_studies_seed

        demo_rating_studies_seed(source=study, annotators=annotators, voters=voters)
    return study
