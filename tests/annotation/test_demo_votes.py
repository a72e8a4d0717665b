"""The demo's seeded votes: labelled, deterministic, and enough for the report to measure the demo's signal judge."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.demo import ANNOTATORS, DEMO_VOTE_KEY, DEMO_VOTE_LABEL
from annotation.demo.seed import SEEDED_VOTERS
from annotation.models import Judgment, Pair

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def demo_votes():
    return Judgment.objects.filter(idempotency_key__startswith=DEMO_VOTE_KEY).select_related("pair", "annotator")


def signature():
    return sorted(
        (j.annotator.username, j.pair.condition.external_id, j.pair.clip_a.sha256, j.pair.clip_b.sha256, j.a_clip.sha256,
         j.alignment_choice.sha256, j.musicality_choice.sha256, str(j.alignment_confidence), str(j.musicality_confidence))
        for j in demo_votes().select_related("pair__condition", "pair__clip_a", "pair__clip_b", "a_clip", "alignment_choice", "musicality_choice")
    )


def test_the_demo_report_shows_the_signal_judge_against_the_seeded_votes(client):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo_judges", stdout=io.StringIO())  # the signal judge's run is scored at once (Celery is eager in tests)

    votes = list(demo_votes())
    assert len(votes) == Judgment.objects.count() == 96 and "Demo votes: 96 seeded answers" in out.getvalue()
    assert {j.source for j in votes} == {Judgment.Source.SEEDED}
    # Stored under accounts of their own that consented before their first vote; the demo's annotators still
    # see the consent page first and have no votes in their name.
    assert {j.annotator.username for j in votes} == set(SEEDED_VOTERS)
    assert all(j.annotator.annotator_profile.consented_at <= j.created_at and not j.annotator.has_usable_password() for j in votes)
    assert not Judgment.objects.filter(annotator__username__in=[name for name, _ in ANNOTATORS]).exists()
    assert all(j.rationale.startswith(DEMO_VOTE_LABEL) for j in votes)
    assert all(j.pair.kind == Pair.Kind.REGULAR for j in votes)
    assert len({j.pair_id for j in votes}) == 32  # four pairs per condition, all three annotators on each

    client.force_login(get_user_model().objects.get(username="researcher"))
    # Left out unless asked for, and said so.
    plain = client.get("/scoring/studies/demo/report/")
    assert plain.status_code == 200 and plain.context["report"]["study"]["votes"] == 0
    assert "96 seeded demo votes" in plain.content.decode() and "left out of these figures" in plain.content.decode()
    response = client.get("/scoring/studies/demo/report/?include_seeded=1")
    assert response.status_code == 200
    assert "Demo data:" in response.content.decode()
    [judge] = [j for j in response.context["report"]["judges"] if j["judge"] == "signal-technical"]
    musicality = judge["dimensions"]["musicality"]
    assert musicality["n"] == 32 and musicality["accuracy"] is not None and musicality["accuracy"] > 0.5
    # The page itself: the judge's row carries an accuracy percentage, not the empty dash.
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))
    assert re.search(rf"musicality 32 {musicality['accuracy'] * 100:.1f}%", text), "no musicality accuracy for the signal judge"
    assert "Votes 96" in text


def test_demo_votes_are_the_same_in_every_database_and_a_forced_reseed_adds_none():
    call_command("seed_demo", stdout=io.StringIO())
    first = signature()
    call_command("seed_demo", "--force", stdout=io.StringIO())
    assert signature() == first and demo_votes().count() == 96
    # A fresh database draws the same votes.
    Judgment.objects.all().delete()
    call_command("seed_demo", "--force", stdout=io.StringIO())
    assert signature() == first
