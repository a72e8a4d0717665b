"""The pair page's audio URLs: one per assignment and side, so nothing the page is given links a side to the same clip
in another pair, to its public /audio/ URL or to a system; only the assignment's annotator is served under them."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment
from annotation.selectors import pair_audio_path
from common import audio_proof
from tests.factories import ClipFactory, ConditionFactory, PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import clip_at

pytestmark = pytest.mark.django_db


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def shared():
    """Two pairs of one study that share a clip and a reference; one annotator who gets both."""
    study = StudyFactory(name="blind-pairs", min_listen_seconds=0.0, overlap_target=1)
    common, reference = ClipFactory(), ClipFactory(system=None)
    for _ in range(2):
        PairFactory(study=study, clip_a=common, clip_b=ClipFactory(), condition=ConditionFactory(reference=reference))
    annotator = StudyAnnotatorFactory(study=study).annotator
    client = Client()
    client.force_login(annotator)
    served = []
    for _ in range(2):
        answer = client.post(reverse("api-assignment-next", kwargs={"name": study.name}), content_type="application/json", data={})
        served.append(answer.json()["assignment"])
        client.post(reverse("api-assignment-skip", kwargs={"assignment_id": served[-1]["id"]}), content_type="application/json", data={"reason": "next"})
    return study, common, reference, annotator, client, served


def _urls(assignment: dict) -> list[str]:
    return [assignment["clips"]["A"]["url"], assignment["clips"]["B"]["url"], assignment["condition"]["reference"]["url"]]


def test_the_same_clip_in_two_pairs_has_two_urls_and_two_etags_and_no_public_id(shared):
    study, common, reference, annotator, client, served = shared
    first, second = served
    assert first["id"] != second["id"]
    urls = _urls(first) + _urls(second)
    assert len(set(urls)) == 6, "every side of every assignment has a URL of its own"
    text = repr(served)
    for clip in (common, reference):
        assert str(clip.public_id) not in text and clip.sha256 not in text
    assert common.system.name not in text
    # The shared clip is served under both assignments' URLs, each with its own ETag and its own proof path.
    shared_urls = [url for url in urls if clip_at(url).pk == common.pk]
    reference_urls = [url for url in urls if clip_at(url).pk == reference.pk]
    assert len(shared_urls) == 2 and len(reference_urls) == 2
    etags, bodies = set(), set()
    for url in shared_urls + reference_urls:
        response = client.get(url)
        assert response.status_code == 200
        etags.add(response["ETag"])
        bodies.add(_body(response))
        headers = repr(dict(response.items()))
        assert audio_proof.HEADER in response and str(common.public_id) not in headers and common.sha256 not in headers
    assert len(etags) == 4 and len(bodies) == 2
    # A URL names no letter's clip by its shape: the token is a signed (assignment, side) and nothing else.
    assert all(re.fullmatch(r"/listen/[^/]+/", url) for url in urls)


def test_only_the_assignments_annotator_is_served_and_a_forged_token_is_nobody(shared):
    study, common, reference, annotator, client, served = shared
    url = served[0]["clips"]["A"]["url"]
    other = StudyAnnotatorFactory(study=study).annotator
    stranger = Client()
    stranger.force_login(other)
    assert stranger.get(url).status_code == 404
    researcher = Client()
    researcher.force_login(UserFactory(username="blind-stranger", roles=["researcher"]))
    assert researcher.get(url).status_code == 404
    assert Client().get(url).status_code == 302  # anonymous: to the sign-in page, no audio
    token = url.split("/")[2]
    for forged in (token[:-3] + "AAA", token.replace(":", ":x"), "e30:nothing"):
        assert client.get(f"/listen/{forged}/").status_code == 404
    # A URL for a side the assignment has not (a made-up label) serves nothing either.
    assert client.get(pair_audio_path(assignment_id=served[0]["id"], label="C")).status_code == 404


def test_a_receipt_under_the_side_url_and_under_the_public_url_both_count(shared):
    from django.db.models import F

    from annotation.services.listening import _pair_serves, _side_clips

    study, common, reference, annotator, client, served = shared
    assignment = Assignment.objects.annotate(clip_a_id=F("pair__clip_a_id"), clip_b_id=F("pair__clip_b_id")).get(pk=served[0]["id"])
    clips = _side_clips(assignment)
    serves = _pair_serves(assignment.pk, clips)
    for side, clip in clips.items():
        assert serves(side, pair_audio_path(assignment_id=assignment.pk, label=side))
        assert serves(side, reverse("clip-audio", kwargs={"public_id": clip.public_id}))
        # Another assignment's URL for the same side is not this assignment's.
        assert not serves(side, pair_audio_path(assignment_id=served[1]["id"], label=side))
    assert not serves("A", pair_audio_path(assignment_id=assignment.pk, label="B"))
