"""Blind means blind on a multi-stimulus item whose hidden reference is the condition's open reference (BS.1534's
design): nothing the page, the API or the audio responses give links the hidden letter to its open twin or singles
it out among the letters, except what follows from its audio being the same audio (its length, hence Content-Length
and duration, and the loudness-matching gain)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from annotation.models import Clip
from annotation.ratings import services
from annotation.ratings.models import RatingAssignment
from tests.factories import ClipFactory, ConditionFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

# Headers that follow from the bytes served: identical audio has identical values, by design of the test method.
FROM_THE_AUDIO = {"content-length", "content-range"}


def _study(annotators: int):
    study = StudyFactory(overlap_target=annotators, min_listen_seconds=1.0, lock_ttl_seconds=600)
    services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    twin = ClipFactory(duration=1.25)
    condition = ConditionFactory(reference=twin)
    tests = [ClipFactory(duration=d) for d in (1.0, 1.5, 2.0)]
    services.rating_item_add(study=study, condition=condition, clips=tests, reference=twin, anchor=ClipFactory(duration=0.75))
    return study, twin, [StudyAnnotatorFactory(study=study).annotator for _ in range(annotators)]


def _served(client, url: str) -> dict[str, dict[str, str]]:
    """The headers of a whole GET, a HEAD and a Range GET of one URL, lower-cased."""
    answers = {"get": client.get(url), "head": client.head(url), "range": client.get(url, HTTP_RANGE="bytes=0-99")}
    assert [a.status_code for a in answers.values()] == [200, 200, 206], url
    return {kind: {k.lower(): v for k, v in answer.headers.items()} for kind, answer in answers.items()}


def test_the_hidden_reference_and_its_open_twin_share_nothing_but_their_audio(client):
    study, twin, (user,) = _study(1)
    client.force_login(user)
    payload = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    page = client.get(reverse("ratings:rate", kwargs={"name": study.name})).content.decode()
    assignment = RatingAssignment.objects.get(pk=payload["id"])
    hidden = next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk)
    letters = {c["label"]: c for c in payload["clips"]}
    open_ref = payload["condition"]["reference"]

    # The API: the same keys for every letter, no role, and URLs that differ from each other and from the open one.
    assert len({tuple(sorted(c)) for c in letters.values()}) == 1 and set(letters["A"]) == {"label", "url", "duration", "gain_db"}
    urls = [c["url"] for c in letters.values()] + [open_ref["url"]]
    assert len(set(urls)) == len(urls)
    text = json.dumps(payload)
    for clip in Clip.objects.all():
        # Nothing a script could match against the open reference or another page: ids, hashes, file names, systems.
        for secret in (str(clip.public_id), clip.sha256, clip.file.name.rsplit("/", 1)[-1], clip.system.name):
            assert secret not in text and secret not in page

    # The audio responses: the same header names everywhere; every value that differs between URLs differs for the
    # hidden letter and its twin too, except those that follow from the bytes.
    served = {label: _served(client, c["url"]) for label, c in letters.items()}
    reference = _served(client, open_ref["url"])
    for kind in ("get", "head", "range"):
        names = {frozenset(h[kind]) for h in served.values()} | {frozenset(reference[kind])}
        assert len(names) == 1, kind
        for name in reference[kind]:
            values = {label: h[kind][name] for label, h in served.items()}
            if name in FROM_THE_AUDIO:
                continue
            if len(set(values.values())) == 1:
                # Equal for all letters (Content-Type, Accept-Ranges, caching rules): says nothing about one of them.
                continue
            assert values[hidden] != reference[kind][name], (kind, name)
            others = [v for label, v in values.items() if label != hidden]
            assert reference[kind][name] not in others, (kind, name)
    etags = [h["get"]["etag"] for h in served.values()] + [reference["get"]["etag"]]
    assert len(set(etags)) == len(etags)
    assert re.fullmatch(r'"[0-9a-f]{40}"', etags[0]) and twin.sha256 not in etags
    # What the audio gives away is the audio: the twin's bytes and duration are the hidden letter's.
    assert served[hidden]["get"]["content-length"] == reference["get"]["content-length"]
    assert letters[hidden]["duration"] == open_ref["duration"]


def test_the_hidden_reference_takes_different_letters_and_the_list_is_in_letter_order(client):
    study, twin, users = _study(8)
    seen = set()
    for user in users:
        client.force_login(user)
        payload = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
        assert [c["label"] for c in payload["clips"]] == ["A", "B", "C", "D", "E"]
        assignment = RatingAssignment.objects.get(pk=payload["id"])
        seen.add(next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk))
    # Eight shuffles of five letters landing on one letter every time has chance 5 * (1/5)**8, under 1e-4.
    assert len(seen) >= 2


def test_one_clip_under_two_assignments_has_two_names_and_two_etags(client):
    study, twin, users = _study(2)
    urls = []
    for user in users:
        client.force_login(user)
        payload = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
        assignment = RatingAssignment.objects.get(pk=payload["id"])
        hidden = next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk)
        url = next(c["url"] for c in payload["clips"] if c["label"] == hidden)
        urls.append((url, client.head(url)["ETag"]))
    assert urls[0][0] != urls[1][0] and urls[0][1] != urls[1][1]
    # A letter's name is no key: someone outside the study holding it hears nothing (the clip rule decides).
    client.force_login(UserFactory())
    assert client.get(urls[1][0]).status_code in (403, 404)
