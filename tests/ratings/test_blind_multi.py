"""Blind means blind on a multi-stimulus item whose hidden reference is the condition's open reference (BS.1534's
design): nothing the page, the API or the audio responses give links the hidden letter to its open twin or singles
it out among the letters. Every letter and the open reference are served in one shape (common/audio_render.py): one
sample rate, channel count and length, the loudness gain in the samples, so even the length, size and gain that
follow from the audio are the same for all; and listening credit is per letter URL, so the open reference's URL
credits no letter."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from django.urls import reverse

from annotation import services as annotation_services
from annotation.models import AudioFetch, Clip
from annotation.ratings import services
from annotation.ratings.models import RatingAssignment
from common import audio_proof
from common.audio_render import FOLDER, rendered_path
from tests.factories import ConditionFactory, StudyAnnotatorFactory, StudyFactory, SystemFactory, UserFactory

pytestmark = pytest.mark.django_db
TARGET = -23.0


def _tone(*, seconds: float, rate: int, amp: float, freq: float, channels: int = 1) -> np.ndarray:
    t = np.arange(int(round(seconds * rate))) / rate
    x = amp * np.sin(2 * np.pi * freq * t)
    return np.stack([x] * channels, axis=1) if channels > 1 else x


def _clip(name: str, **tone):
    clip, _ = annotation_services.clip_ingest_array(audio=_tone(**tone), sample_rate=tone["rate"], fmt="WAV", system=SystemFactory(name=name))
    return clip


def _study(annotators: int):
    """Letters that differ in length (0.75-2 s), sample rate (16, 22.05, 48 kHz), channels and loudness (20 dB apart)."""
    study = StudyFactory(overlap_target=annotators, min_listen_seconds=1.0, lock_ttl_seconds=600)
    assert study.loudness_match and study.loudness_target_lufs == TARGET
    services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    twin = _clip("sys-open-twin", seconds=1.25, rate=22050, amp=0.2, freq=330.0)
    condition = ConditionFactory(reference=twin)
    tests = [
        _clip("sys-quiet-long", seconds=2.0, rate=16000, amp=0.03, freq=440.0),
        _clip("sys-loud-stereo", seconds=1.0, rate=48000, amp=0.3, freq=550.0, channels=2),
        _clip("sys-middle-one", seconds=1.5, rate=22050, amp=0.1, freq=660.0),
    ]
    anchor = _clip("sys-anchor-low", seconds=0.75, rate=16000, amp=0.05, freq=770.0)
    services.rating_item_add(study=study, condition=condition, clips=tests, reference=twin, anchor=anchor)
    assert len({study.clip_gain_db(c) for c in (twin, *tests, anchor)}) == 5
    return study, twin, [StudyAnnotatorFactory(study=study).annotator for _ in range(annotators)]


def _next(client, study) -> tuple[dict, RatingAssignment]:
    payload = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    return payload, RatingAssignment.objects.get(pk=payload["id"])


def _served(client, url: str) -> dict[str, dict[str, str]]:
    """The headers of a whole GET, a HEAD and a Range GET of one URL, lower-cased, and the GET's body."""
    answers = {"get": client.get(url), "head": client.head(url), "range": client.get(url, HTTP_RANGE="bytes=0-99")}
    assert [a.status_code for a in answers.values()] == [200, 200, 206], url
    served = {kind: {k.lower(): v for k, v in answer.headers.items()} for kind, answer in answers.items()}
    served["body"] = b"".join(answers["get"].streaming_content)
    return served


def test_nothing_tells_the_hidden_reference_from_the_other_letters(client):
    study, twin, (user,) = _study(1)
    client.force_login(user)
    payload, assignment = _next(client, study)
    page = client.get(reverse("ratings:rate", kwargs={"name": study.name})).content.decode()
    hidden = next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk)
    letters = {c["label"]: c for c in payload["clips"]}
    open_ref = payload["condition"]["reference"]

    # The API: the same keys, one duration and a 0 dB gain for every letter and the open reference; distinct URLs.
    assert len({tuple(sorted(c)) for c in letters.values()}) == 1 and set(letters["A"]) == {"label", "url", "duration", "gain_db"}
    entries = [*letters.values(), open_ref]
    assert {e["duration"] for e in entries} == {2.0} and {e["gain_db"] for e in entries} == {0.0}
    urls = [e["url"] for e in entries]
    assert len(set(urls)) == len(urls)
    text = json.dumps(payload)
    for clip in Clip.objects.all():
        # Nothing a script could match against the open reference or another page: ids, hashes, file names, systems.
        for secret in (str(clip.public_id), clip.sha256, clip.file.name.rsplit("/", 1)[-1], clip.system.name):
            assert secret not in text and secret not in page

    # The audio responses: every header is either the same for every letter and the open reference, or different for
    # each of them; so no value groups the hidden letter with its twin or sets it apart from the other letters.
    served = {label: _served(client, c["url"]) for label, c in letters.items()}
    served["ref"] = _served(client, open_ref["url"])
    for kind in ("get", "head", "range"):
        assert len({frozenset(h[kind]) for h in served.values()}) == 1, kind
        for name in served["ref"][kind]:
            values = [h[kind][name] for h in served.values()]
            assert len(set(values)) in (1, len(values)), (kind, name, values)
    get = served["ref"]["get"]
    assert {h["get"]["content-length"] for h in served.values()} == {get["content-length"]}
    assert {h["range"]["content-range"] for h in served.values()} == {served["ref"]["range"]["content-range"]}
    assert {h["get"]["content-type"] for h in served.values()} == {"audio/wav"}
    etags = [h["get"]["etag"] for h in served.values()]
    assert len(set(etags)) == len(etags) and re.fullmatch(r'"[0-9a-f]{40}"', etags[0]) and twin.sha256 not in etags[0]

    # The bytes: one shape (the highest rate and channel count, the longest letter), 16-bit PCM, levelled in the samples.
    decoded = {label: sf.read(io.BytesIO(h["body"]), dtype="float64", always_2d=True) for label, h in served.items()}
    infos = {label: sf.info(io.BytesIO(h["body"])) for label, h in served.items()}
    assert {(i.samplerate, i.channels, i.frames, i.subtype) for i in infos.values()} == {(48000, 2, 96000, "PCM_16")}
    meter = pyloudnorm.Meter(48000)
    for label, (samples, _) in decoded.items():
        # Each clip at the target within the rounding of the page gain and 16 bits, its gain being in the samples:
        # measured over its own length and channels (a mono clip is copied to both, which plays it as before).
        clip = twin if label == "ref" else Clip.objects.get(pk=assignment.labels[label])
        own = samples[: int(round(clip.duration * 48000)), : clip.channels]
        assert meter.integrated_loudness(own) == pytest.approx(TARGET, abs=0.15), label
        if clip.channels == 1:
            assert np.array_equal(samples[:, 0], samples[:, 1]), label
    shortest = next(label for label, c in letters.items() if assignment.labels[label] == Clip.objects.get(system__name="sys-anchor-low").pk)
    assert not decoded[shortest][0][int(0.76 * 48000) :].any()
    # The hidden letter's audio is its twin's: the test method's design, now in the same shape as every letter.
    assert np.array_equal(decoded[hidden][0], decoded["ref"][0])


def test_the_audio_proof_is_drawn_over_the_rendered_bytes(client):
    study, _, (user,) = _study(1)
    client.force_login(user)
    payload, assignment = _next(client, study)
    response = client.get(payload["clips"][0]["url"])
    body = b"".join(response.streaming_content)
    token = response["Audio-Proof"]
    challenge = audio_proof.challenge_open(token)
    assert (challenge["first"], challenge["last"]) == (0, len(body) - 1)
    # The copy the page was sent is the file the challenge's answer is checked against, not the stored clip.
    sent = next(p for p in rendered_path("00").parent.parent.rglob("*.wav") if p.read_bytes() == body)
    answer = audio_proof.answer_bytes(audio_proof.answer_for(body, token))
    assert answer == audio_proof.expected_bytes(str(sent), challenge["ranges"])
    source = Clip.objects.get(pk=assignment.labels["A"]).file.path
    assert answer != audio_proof.expected_bytes(source, challenge["ranges"])


def test_copies_are_made_once_and_leave_no_temporary_files(client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    study, _, (user,) = _study(1)
    client.force_login(user)
    payload, _ = _next(client, study)
    folder = tmp_path / FOLDER
    urls = [c["url"] for c in payload["clips"]] + [payload["condition"]["reference"]["url"]]
    for url in urls:
        b"".join(client.get(url).streaming_content)
    made = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    # One copy per clip in the page's shape and gain: the hidden letter and its open twin are one copy.
    assert len(made) == len(urls) - 1 and all(p.suffix == ".wav" for p in made)
    for url in urls:
        assert client.head(url).status_code == 200
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} == made


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_a_source_that_cannot_be_read_is_a_clear_503_and_records_nothing(client, damage, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path  # no copy made by another test
    study, twin, (user,) = _study(1)
    client.force_login(user)
    payload, assignment = _next(client, study)
    label = next(label for label, clip_id in assignment.labels.items() if clip_id != twin.pk)
    clip = Clip.objects.get(pk=assignment.labels[label])
    path = clip.file.path
    if damage == "missing":
        import os

        os.remove(path)
    else:
        with open(path, "wb") as handle:
            handle.write(b"not audio at all" * 100)
    response = client.get(next(c["url"] for c in payload["clips"] if c["label"] == label))
    assert response.status_code == 503
    assert "cannot be played" in response.content.decode() and path not in response.content.decode()
    assert not AudioFetch.objects.filter(clip=clip).exists()


def test_fetching_the_open_reference_credits_no_letter(client):
    from datetime import timedelta

    from django.utils import timezone

    study, twin, (user,) = _study(1)
    client.force_login(user)
    payload, assignment = _next(client, study)
    hidden = next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk)
    b"".join(client.get(payload["condition"]["reference"]["url"]).streaming_content)
    # The clip's own public URL is no letter either.
    b"".join(client.get(reverse("ratings:audio", kwargs={"token": str(twin.public_id)})).streaming_content)
    other = next(label for label in assignment.labels if label != hidden)
    response = client.get(next(c["url"] for c in payload["clips"] if c["label"] == other))
    body = b"".join(response.streaming_content)
    # The page proves receiving the letter it fetched (common/audio_proof.py), as a browser does.
    from common import audio_proof

    token = response["Audio-Proof"]
    services.rating_listening_record(
        assignment_id=assignment.pk, annotator=user, events=[], receipts=[{"side": other, "token": token, "bytes": audio_proof.answer_for(body, token)}]
    )
    # Listening posted for every letter, long enough, as a page would.
    start = timezone.now() + timedelta(seconds=1)
    seq, t = 0, 0.0
    for label in assignment.labels:
        for kind in ("switch" if seq else "play", "tick", "tick"):
            seq += 1
            services.rating_listening_record(
                assignment_id=assignment.pk, annotator=user, events=[{"seq": seq, "side": label, "kind": kind}], now=start + timedelta(seconds=t)
            )
            t += 1.0
    record = RatingAssignment.objects.get(pk=assignment.pk).listening
    assert record[other]["seconds"] >= 1.0
    assert record[hidden]["seconds"] == 0.0 and record[hidden]["served_seconds"] == 0.0
    answer = client.post(
        reverse("ratings:api-submit", kwargs={"assignment_id": assignment.pk}),
        {"idempotency_key": "k1", "ratings": {label: {"musicality": 50} for label in assignment.labels}},
        content_type="application/json",
    )
    assert answer.status_code == 400 and answer.json()["code"] == "listening_too_short"
    assert hidden in answer.json()["detail"] and other not in answer.json()["detail"].split("heard")[0]

    # Fetching (and proving) the letters themselves credits them.
    for entry in payload["clips"]:
        response = client.get(entry["url"])
        body = b"".join(response.streaming_content)
        token = response["Audio-Proof"]
        receipt = {"side": entry["label"], "token": token, "bytes": audio_proof.answer_for(body, token)}
        services.rating_listening_record(assignment_id=assignment.pk, annotator=user, events=[], receipts=[receipt])
    later = start + timedelta(seconds=t + 1)
    for label in assignment.labels:
        for kind in ("switch", "tick", "tick"):
            seq += 1
            services.rating_listening_record(
                assignment_id=assignment.pk, annotator=user, events=[{"seq": seq, "side": label, "kind": kind}], now=later + timedelta(seconds=t)
            )
            t += 1.0
    record = RatingAssignment.objects.get(pk=assignment.pk).listening
    assert all(record[label]["seconds"] >= 1.0 for label in assignment.labels), record
    answer = client.post(
        reverse("ratings:api-submit", kwargs={"assignment_id": assignment.pk}),
        {"idempotency_key": "k2", "ratings": {label: {"musicality": 50} for label in assignment.labels}},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content


def test_the_hidden_reference_takes_different_letters_and_the_list_is_in_letter_order(client):
    study, twin, users = _study(8)
    seen = set()
    for user in users:
        client.force_login(user)
        payload, assignment = _next(client, study)
        assert [c["label"] for c in payload["clips"]] == ["A", "B", "C", "D", "E"]
        seen.add(next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk))
    # Eight shuffles of five letters landing on one letter every time has chance 5 * (1/5)**8, under 1e-4.
    assert len(seen) >= 2


def test_one_clip_under_two_assignments_has_two_names_and_two_etags(client):
    study, twin, users = _study(2)
    urls = []
    for user in users:
        client.force_login(user)
        payload, assignment = _next(client, study)
        hidden = next(label for label, clip_id in assignment.labels.items() if clip_id == twin.pk)
        url = next(c["url"] for c in payload["clips"] if c["label"] == hidden)
        urls.append((url, client.head(url)["ETag"]))
    assert urls[0][0] != urls[1][0] and urls[0][1] != urls[1][1]
    # A letter's name is no key: someone outside the study holding it hears nothing (the clip rule decides).
    client.force_login(UserFactory())
    assert client.get(urls[1][0]).status_code in (403, 404)


# --- ACR pages of a study that rates the open reference itself (ACR-HR) ----------------------------------------------


def _acr_study(*, hidden: bool):
    study = StudyFactory(overlap_target=1, min_listen_seconds=1.0, lock_ttl_seconds=600)
    services.rating_task_set(study=study, task="acr", dimensions=["musicality"])
    twin = _clip("acr-open-twin", seconds=1.25, rate=22050, amp=0.2, freq=330.0)
    condition = ConditionFactory(reference=twin)
    rated = [_clip("acr-long-loud", seconds=2.0, rate=48000, amp=0.3, freq=440.0, channels=2), _clip("acr-short-quiet", seconds=0.75, rate=16000, amp=0.03, freq=550.0)]
    for clip in [*rated, *([twin] if hidden else [])]:
        services.rating_item_add(study=study, condition=condition, clips=[clip])
    return study, twin, rated


def _acr_pages(client, study, n: int):
    user = StudyAnnotatorFactory(study=study).annotator
    client.force_login(user)
    pages = []
    for _ in range(n):
        payload, assignment = _next(client, study)
        (letter,) = payload["clips"]
        pages.append((payload, assignment, letter, payload["condition"]["reference"]))
        services.rating_skip(assignment_id=assignment.pk, annotator=user, reason="next page")
    return pages


def test_acr_pages_of_a_study_with_a_hidden_reference_give_the_item_and_the_open_reference_one_shape(client):
    study, twin, rated = _acr_study(hidden=True)
    pages = _acr_pages(client, study, 3)
    assert sorted(assignment.labels[letter["label"]] for _, assignment, letter, _ in pages) == sorted([twin.pk, *(c.pk for c in rated)])
    for payload, assignment, letter, open_ref in pages:
        # On every page, the rated clip and the open reference: one duration, 0 dB, the same size and type.
        assert letter["duration"] == open_ref["duration"] and letter["gain_db"] == open_ref["gain_db"] == 0.0
        mine, ref = _served(client, letter["url"]), _served(client, open_ref["url"])
        for name in ("content-length", "content-type"):
            assert mine["get"][name] == ref["get"][name], name
        assert mine["range"]["content-range"] == ref["range"]["content-range"] and mine["get"]["etag"] != ref["get"]["etag"]
        info, ref_info = sf.info(io.BytesIO(mine["body"])), sf.info(io.BytesIO(ref["body"]))
        assert (info.samplerate, info.channels, info.frames) == (ref_info.samplerate, ref_info.channels, ref_info.frames)


def test_acr_pages_without_a_hidden_reference_serve_the_clip_as_stored(client):
    study, twin, rated = _acr_study(hidden=False)
    pages = _acr_pages(client, study, 2)
    for payload, assignment, letter, open_ref in pages:
        clip = Clip.objects.get(pk=assignment.labels[letter["label"]])
        assert letter["duration"] == round(clip.duration, 3) and open_ref["duration"] == round(twin.duration, 3)
        with clip.file.open("rb") as handle:
            assert _served(client, letter["url"])["body"] == handle.read()
