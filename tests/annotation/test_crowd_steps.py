"""The headphone screen, the practice round and recruitment links: server-made and server-checked, never data, one account per participant."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from urllib.parse import urlencode

import numpy as np
import pytest
import soundfile as sf
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.crowd_models import ExternalParticipant, PracticeAnswer, PracticeItem, RecruitmentLink, ScreeningAttempt
from annotation.models import Judgment, Pair, StudyAnnotator
from annotation.screens import huggins as screening
from common.errors import ServiceError
from tests.crowd import play_practice, play_screen
from tests.factories import JudgmentFactory, PairFactory, StudyAnnotatorFactory, StudyFactory

pytestmark = pytest.mark.django_db


# --- Trials ------------------------------------------------------------------------------------


def _band_energy(signal: np.ndarray, frequency: float) -> float:
    spectrum = np.fft.rfft(signal)
    freqs = np.fft.rfftfreq(len(signal), 1.0 / screening.SAMPLE_RATE)
    band = np.abs(freqs - frequency) <= screening.BANDWIDTH * frequency * 0.8
    return float(np.sum(np.abs(spectrum[band]) ** 2))


def _intervals(audio: np.ndarray) -> list[np.ndarray]:
    n, gap = int(screening.SAMPLE_RATE * screening.BURST_SECONDS), int(screening.SAMPLE_RATE * screening.GAP_SECONDS)
    return [audio[k * (n + gap) : k * (n + gap) + n] for k in range(screening.INTERVALS)]


def headphone_listener(seed: int, index: int) -> int:
    """Hears each ear separately: the interval whose ears differ in the band is the one with the pitch."""
    frequency = screening.trial_spec(seed, index)["frequency"]
    return 1 + int(np.argmax([_band_energy(i[:, 0] - i[:, 1], frequency) for i in _intervals(screening.trial_audio(seed, index))]))


def loudspeaker_listener(seed: int, index: int) -> int:
    """Hears the two channels mixed in the room: picks the interval with the most energy in the band, as a listener hunting for a tone would."""
    frequency = screening.trial_spec(seed, index)["frequency"]
    return 1 + int(np.argmax([_band_energy(i[:, 0] + i[:, 1], frequency) for i in _intervals(screening.trial_audio(seed, index))]))


def test_trials_are_made_from_the_seed_and_written_as_stereo_wav():
    assert screening.answers_for(7, 6) == screening.answers_for(7, 6)
    assert screening.answers_for(7, 20) != screening.answers_for(8, 20)
    data, rate = sf.read(io.BytesIO(screening.trial_wav(7, 0)))
    assert rate == screening.SAMPLE_RATE and data.shape[1] == 2
    assert np.allclose(data, screening.trial_audio(7, 0), atol=1 / 2**14)


def test_headphones_pass_and_a_loudspeaker_response_pattern_fails():
    trials = 12
    for seed in range(3):
        heard = [headphone_listener(seed, i) for i in range(trials)]
        assert screening.score(seed, heard) == trials
        mixed = [loudspeaker_listener(seed, i) for i in range(trials)]
        # Over loudspeakers the target's band cancels: the mixed-down listener never finds it.
        assert screening.score(seed, mixed) == 0
    # The study's pass rule (5 of 6) refuses chance-level answering.
    assert screening.score(1, [1] * 6) < 5


# --- Screening service and pages -------------------------------------------------------------


@pytest.fixture
def screened():
    study = StudyFactory(name="screened", screening="huggins", screening_trials=4, screening_pass=4, screening_retries=1)
    member = StudyAnnotatorFactory(study=study)
    return study, member.annotator


def test_answers_are_checked_on_the_server_with_retries(screened):
    study, user = screened
    attempt = services.screening_attempt_open(study=study, annotator=user)
    assert services.screening_attempt_open(study=study, annotator=user).pk == attempt.pk  # the open attempt comes back
    wrong = [(t % 3) + 1 for t in screening.answers_for(attempt.seed, attempt.trials)]
    failed = services.screening_answer(token=attempt.token, annotator=user, answers=wrong)
    assert failed.passed is False and failed.correct == 0
    assert services.screening_status(study=study, annotator=user)["state"] == "open"  # one retry left
    retry = services.screening_attempt_open(study=study, annotator=user)
    assert retry.seed != attempt.seed
    right = services.screening_answer(token=retry.token, annotator=user, answers=screening.answers_for(retry.seed, retry.trials))
    assert right.passed and services.screening_status(study=study, annotator=user)["state"] == "passed"


def test_someone_elses_or_a_replayed_or_malformed_answer_is_refused_and_changes_nothing(screened):
    study, user = screened
    other = StudyAnnotatorFactory(study=study).annotator
    attempt = services.screening_attempt_open(study=study, annotator=user)
    answers = screening.answers_for(attempt.seed, attempt.trials)
    with pytest.raises(ServiceError) as exc:
        services.screening_answer(token=attempt.token, annotator=other, answers=answers)
    assert exc.value.status == 404
    for bad in ([1, 2], [0, 1, 2, 3], ["1", "2", "3", "1"], "1234"):
        with pytest.raises(ServiceError) as exc:
            services.screening_answer(token=attempt.token, annotator=user, answers=bad)
        assert exc.value.code == "bad_answers"
    attempt.refresh_from_db()
    assert attempt.passed is None and attempt.answers == []
    services.screening_answer(token=attempt.token, annotator=user, answers=answers)
    with pytest.raises(ServiceError) as exc:
        services.screening_answer(token=attempt.token, annotator=user, answers=[1, 1, 1, 1])
    assert exc.value.code == "already_answered"
    attempt.refresh_from_db()
    assert attempt.passed and attempt.answers == answers


def test_the_pairs_wait_for_the_screen_and_a_failed_screen_ends_kindly(client, screened):
    study, user = screened
    PairFactory(study=study)
    client.force_login(user)
    annotate = reverse("annotate", kwargs={"name": study.name})
    assert client.get(annotate)["Location"] == reverse("screening", kwargs={"name": study.name})
    assert client.post(reverse("api-assignment-next", kwargs={"name": study.name})).status_code == 403
    page = client.get(reverse("screening", kwargs={"name": study.name}))
    assert page.status_code == 200 and page.content.count(b"<audio") == 4
    attempt = ScreeningAttempt.objects.get(annotator=user)
    # The page never carries the answers; the audio is the trial made from the seed.
    wav = client.get(reverse("screening-trial", kwargs={"token": attempt.token, "index": 0}))
    assert wav["Content-Type"] == "audio/wav" and wav.content == screening.trial_wav(attempt.seed, 0)
    for _ in range(2):  # the attempt and its one retry, both failed
        attempt = ScreeningAttempt.objects.filter(annotator=user, passed__isnull=True).get()
        wrong = {f"trial-{i}": str((t % 3) + 1) for i, t in enumerate(screening.answers_for(attempt.seed, attempt.trials))}
        unplayed = client.post(reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token}), wrong)
        assert unplayed.status_code == 400 and b"Play every sound" in unplayed.content  # answers count only for sounds played
        receipts = play_screen(client, attempt)
        response = client.post(reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token}), {"trials": "4", **wrong, **receipts})
    assert response.status_code == 200 and b"Thank you for your time" in response.content
    assert client.get(annotate)["Location"] == reverse("screening", kwargs={"name": study.name})
    assert b"did not pass" in client.get(reverse("screening", kwargs={"name": study.name})).content
    assert ScreeningAttempt.objects.filter(annotator=user).count() == 2


# --- Practice ------------------------------------------------------------------------------------


@pytest.fixture
def practising():
    study = StudyFactory(name="practising")
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD)
    gold.expected_alignment, gold.expected_musicality = gold.clip_a, gold.clip_b
    gold.save()
    item = services.practice_from_gold(pair=gold, explanation="A names the instruments asked for; B is cleaner.")
    regular = PairFactory(study=study)
    member = StudyAnnotatorFactory(study=study)
    return study, item, regular, member.annotator


def test_practice_comes_first_with_feedback_and_never_becomes_data(client, practising, tmp_path):
    study, item, regular, user = practising
    client.force_login(user)
    annotate = reverse("annotate", kwargs={"name": study.name})
    practice = reverse("practice", kwargs={"name": study.name})
    assert client.get(annotate)["Location"] == practice
    page = client.get(practice)
    assert page.status_code == 200 and b"Practice pair 1 of 1" in page.content
    shown_a = page.context["shown_a"]
    # Answer as shown: the expected alignment clip (clip_a) and the other one for musicality.
    a_side = "A" if shown_a == "a" else "B"
    b_side = "B" if a_side == "A" else "A"
    unplayed = client.post(practice, {"item": item.pk, "shown_a": shown_a, "alignment": a_side, "musicality": a_side})
    assert unplayed.status_code == 400 and b"Play both clips" in unplayed.content
    receipts = play_practice(client, item, shown_a)
    # Fetched but the receipts left out, or one clip's receipt for the other: still not heard.
    fetched_only = client.post(practice, {"item": item.pk, "shown_a": shown_a, "alignment": a_side, "musicality": a_side})
    assert fetched_only.status_code == 400 and b"Play both clips" in fetched_only.content
    swapped = {"receipt_A": receipts["receipt_B"], "receipt_B": receipts["receipt_A"]}
    assert client.post(practice, {"item": item.pk, "shown_a": shown_a, "alignment": a_side, "musicality": a_side, **swapped}).status_code == 400
    feedback = client.post(practice, {"item": item.pk, "shown_a": shown_a, "alignment": a_side, "musicality": a_side, **receipts})
    assert feedback.status_code == 200
    assert feedback.context["feedback"]["alignment"] == {"expected": a_side, "right": True}
    assert feedback.context["feedback"]["musicality"] == {"expected": b_side, "right": False}
    assert b"A names the instruments asked for" in feedback.content
    assert client.post(practice, {"item": item.pk, "shown_a": shown_a, "alignment": "A", "musicality": "A", **receipts}).status_code == 409
    assert client.get(annotate).status_code == 200  # the round is done: the real pairs follow
    assert Judgment.objects.count() == 0 and PracticeAnswer.objects.count() == 1
    # Never in the votes, the export or the report.
    call_command("export_dataset", "--out", str(tmp_path / "ds"), "--study", study.name, stdout=io.StringIO())
    assert (tmp_path / "ds" / "train.jsonl").read_text() == ""
    from scoring.agreement import votes_frame

    assert votes_frame(study=study).empty


def test_a_practice_pair_posted_as_a_judgment_is_refused_and_stores_nothing(client, practising):
    study, item, regular, user = practising
    client.force_login(user)
    response = client.post(
        reverse("api-judgment-submit", kwargs={"assignment_id": item.pk}),
        {"alignment": "A", "musicality": "A", "alignment_confidence": 3, "musicality_confidence": 3, "idempotency_key": "practice-1"},
        content_type="application/json",
    )
    assert response.status_code == 404 and Judgment.objects.count() == 0 and PracticeAnswer.objects.count() == 0


def test_practice_items_come_only_from_gold_pairs_with_an_explanation(practising):
    study, item, regular, user = practising
    with pytest.raises(ServiceError):
        services.practice_from_gold(pair=regular, explanation="x")
    with pytest.raises(ServiceError):
        other = PairFactory(study=study, kind=Pair.Kind.GOLD)
        other.expected_alignment = other.clip_a
        other.save()
        services.practice_from_gold(pair=other, explanation="  ")
    assert PracticeItem.objects.count() == 1


# --- Recruitment links ------------------------------------------------------------------------------


@pytest.fixture
def link():
    study = StudyFactory(name="recruited")
    PairFactory(study=study)
    return services.recruitment_link_create(study=study, completion_code="C0MPL3TE", screenout_code="SCR33N", cap=2)


def _enter(client, link, pid="5f0c0ffee", session="s1"):
    """The participant opens the link (a page) and presses Start (the POST that signs them in)."""
    url = f"{reverse('recruitment-enter', kwargs={'token': link.token})}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': 'st1', 'SESSION_ID': session})}"
    page = client.get(url)
    if page.status_code != 200:
        return page
    return client.post(url, {})


def test_a_participant_id_makes_one_account_that_resumes_and_is_never_exported(client, link):
    first = _enter(client, link)
    assert first.status_code == 200 and first.context["next_url"].startswith(reverse("consent"))
    participant = ExternalParticipant.objects.get()
    assert participant.participant_hash != "5f0c0ffee" and "5f0c0ffee" not in participant.user.username
    assert StudyAnnotator.objects.filter(study=link.study, annotator=participant.user).exists()
    del client.cookies[settings.SESSION_COOKIE_NAME]  # the session ends; the signed resume cookie stays in this browser
    again = _enter(client, link, session="s2")
    assert again.status_code == 302 and ExternalParticipant.objects.count() == 1
    participant.refresh_from_db()
    assert participant.platform_session_id == "s2"
    assert int(client.session["_auth_user_id"]) == participant.user_id
    # Nowhere in what an export writes: the account's pseudonym stands for the participant.
    profile = participant.user.annotator_profile
    assert "5f0c0ffee" not in profile.pseudonym


def test_the_end_shows_the_completion_code_and_redirects(client, link):
    _enter(client, link)
    participant = ExternalParticipant.objects.get()
    services.consent_give(user=participant.user)
    done = reverse("recruitment-done", kwargs={"name": link.study.name})
    assert client.get(done).status_code == 409  # a pair is still open
    page = client.get(reverse("annotate", kwargs={"name": link.study.name}))
    assert page.context["finish_url"] == done
    JudgmentFactory(pair=link.study.pairs.get(), annotator=participant.user)  # the only pair judged: all assigned done
    response = client.get(done)
    assert response.status_code == 200 and b"C0MPL3TE" in response.content
    assert b"https://app.prolific.com/submissions/complete?cc=C0MPL3TE" in response.content
    assert ExternalParticipant.objects.get().completed_at is not None
    # Earned once, it stays earned after the study closes.
    type(link.study).objects.filter(pk=link.study.pk).update(is_active=False)
    assert b"C0MPL3TE" in client.get(done).content


def test_a_participants_end_of_study_has_finishing_as_its_one_primary_action(client, link):
    _enter(client, link)
    participant = ExternalParticipant.objects.get()
    services.consent_give(user=participant.user)
    page = client.get(reverse("annotate", kwargs={"name": link.study.name})).content.decode()
    empty = page[page.index('id="stage-empty"') : page.index("</section>", page.index('id="stage-empty"'))]
    assert 'class="button primary" id="finish-link"' in empty and "Finish and get your completion code" in empty
    assert "Back to my studies" not in empty and empty.count("primary") == 1
    # An annotator who did not come from a link finishes by going back to their studies.
    member = StudyAnnotatorFactory(study=link.study).annotator
    services.consent_give(user=member)
    client.force_login(member)
    page = client.get(reverse("annotate", kwargs={"name": link.study.name})).content.decode()
    assert 'id="finish-link"' not in page and 'class="button primary" id="home-link"' in page


def test_no_completion_code_for_no_work_in_a_closed_or_empty_study(client, link):
    _enter(client, link)
    participant = ExternalParticipant.objects.get()
    services.consent_give(user=participant.user)
    done = reverse("recruitment-done", kwargs={"name": link.study.name})
    type(link.study).objects.filter(pk=link.study.pk).update(is_active=False)  # closed with nothing judged
    closed = client.get(done)
    assert closed.status_code == 200 and b"C0MPL3TE" not in closed.content and b"nothing left to do" in closed.content
    type(link.study).objects.filter(pk=link.study.pk).update(is_active=True)
    link.study.pairs.update(overlap=1)
    JudgmentFactory(pair=link.study.pairs.get())  # empty for this participant: every pair has its votes from others
    empty = client.get(done)
    assert empty.status_code == 200 and b"C0MPL3TE" not in empty.content and b"no completion code" in empty.content
    assert ExternalParticipant.objects.get().completed_at is None


def test_a_screened_out_participant_gets_the_screen_out_code(client, link):
    study = link.study
    study.screening, study.screening_trials, study.screening_pass, study.screening_retries = "huggins", 3, 3, 0
    study.save()
    _enter(client, link)
    services.consent_give(user=ExternalParticipant.objects.get().user)
    client.get(reverse("screening", kwargs={"name": study.name}))
    attempt = ScreeningAttempt.objects.get()
    wrong = {f"trial-{i}": str((t % 3) + 1) for i, t in enumerate(screening.answers_for(attempt.seed, 3))}
    receipts = play_screen(client, attempt)
    response = client.post(reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token}), {"trials": "3", **wrong, **receipts})
    assert b"SCR33N" in response.content and b"cc=SCR33N" in response.content
    assert ExternalParticipant.objects.get().screened_out_at is not None


def test_an_expired_or_full_link_or_a_missing_id_is_refused_and_stores_nothing(client, link):
    from django.test import Client

    first = Client()
    _enter(first, link, pid="p1")
    _enter(Client(), link, pid="p2")
    users = ExternalParticipant.objects.count()
    full = _enter(Client(), link, pid="p3")
    assert full.status_code == 410 and b"full" in full.content
    assert _enter(first, link, pid="p1").status_code == 302  # a known participant still resumes in their browser
    missing = client.get(reverse("recruitment-enter", kwargs={"token": link.token}))
    assert missing.status_code == 400 and b"participant id" in missing.content
    assert _enter(client, link, pid="bad id!").status_code == 400
    RecruitmentLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = _enter(client, link, pid="p4")
    assert expired.status_code == 410 and b"expired" in expired.content
    assert client.get(reverse("recruitment-enter", kwargs={"token": "nope"}), {"PROLIFIC_PID": "x"}).status_code == 404
    assert ExternalParticipant.objects.count() == users == 2


def test_the_annotator_table_shows_screen_and_practice_results(client, screened):
    from tests.factories import UserFactory

    study, user = screened
    attempt = services.screening_attempt_open(study=study, annotator=user)
    services.screening_answer(token=attempt.token, annotator=user, answers=screening.answers_for(attempt.seed, attempt.trials))
    client.force_login(UserFactory(username="boss", roles=["admin"]))
    page = client.get(reverse("study-manage", kwargs={"name": study.name}))
    assert b"Headphone check" in page.content and b"passed 4/4, attempt 1" in page.content


def test_a_practice_answer_never_reveals_a_served_pairs_expected_answer(client, practising):
    """Practice comes from its own pool: whatever practice serves, no pair the study serves shares a clip with it,
    even for a practice item made the old way (a copy of a gold pair that stayed in the study)."""
    study, item, regular, user = practising
    kept = PairFactory(study=study, kind=Pair.Kind.GOLD)
    kept.expected_alignment = kept.clip_a
    kept.save()
    legacy = PracticeItem.objects.create(study=study, position=5, condition=kept.condition, clip_a=kept.clip_a, clip_b=kept.clip_b,
                                         expected_alignment=kept.clip_a, explanation="a copy")  # fmt: skip
    # Served pairs cannot be moved into practice, nor pairs that share a clip with a served one.
    shared = PairFactory(study=study, kind=Pair.Kind.GOLD, clip_a=regular.clip_a)
    shared.expected_alignment = shared.clip_a
    shared.save()
    with pytest.raises(ServiceError):
        services.practice_from_gold(pair=shared, explanation="x")
    services.consent_give(user=user)
    client.force_login(user)
    served_clips = set(Pair.objects.filter(study=study).values_list("clip_a", flat=True)) | set(Pair.objects.filter(study=study).values_list("clip_b", flat=True))
    shown = []
    while (nxt := services.practice_next(study=study, annotator=user)) is not None:
        assert {nxt.clip_a_id, nxt.clip_b_id}.isdisjoint(served_clips)
        receipts = play_practice(client, nxt)
        response = client.post(reverse("practice", kwargs={"name": study.name}), {"item": nxt.pk, "shown_a": "a", "alignment": "A", "musicality": "A", **receipts})
        assert response.status_code == 200
        shown.append(nxt.pk)
    assert shown == [item.pk] and legacy.pk not in shown
    # The legacy copy can be neither played nor answered directly.
    assert client.get(reverse("practice-audio", kwargs={"item_id": legacy.pk, "which": "a"})).status_code == 404
    assert client.post(reverse("practice", kwargs={"name": study.name}), {"item": legacy.pk, "shown_a": "a", "alignment": "A", "musicality": "A"}).status_code in (400, 404)
    assert not PracticeAnswer.objects.filter(item=legacy).exists()


def test_practice_audio_is_sent_whole_with_a_challenge_so_a_range_of_the_challenged_bytes_proves_nothing(client, practising):
    from common import audio_proof

    study, item, regular, user = practising
    client.force_login(user)
    url = reverse("practice-audio", kwargs={"item_id": item.pk, "which": "a"})
    whole = client.get(url, HTTP_RANGE="bytes=0-99")
    body = b"".join(whole.streaming_content)
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "none" and len(body) == item.clip_a.file.size
    challenge = audio_proof.challenge_open(whole[audio_proof.HEADER])
    assert (challenge["first"], challenge["last"]) == (0, len(body) - 1) and challenge["path"] == url


def test_a_screening_sound_counts_as_played_only_with_its_own_receipt(client):
    from common import audio_proof

    study = StudyFactory(name="screen-proof", screening="huggins", screening_trials=2, screening_pass=2)
    PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    services.consent_give(user=user)
    client.force_login(user)
    attempt = services.screening_attempt_open(study=study, annotator=user)
    submit = reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token})
    right = {f"trial-{i}": str(a) for i, a in enumerate(screening.answers_for(attempt.seed, attempt.trials))}
    receipts = play_screen(client, attempt)
    # Fetched (the server sent both sounds) but no receipt: not played.
    fetched_only = client.post(submit, right)
    assert fetched_only.status_code == 400 and b"not played yet: sound 1, 2" in fetched_only.content
    # Sound 1's receipt offered for sound 2, and a guess at the bytes: refused with the reason, nothing changes.
    swapped = client.post(submit, {**right, "receipt-0": receipts["receipt-0"], "receipt-1": receipts["receipt-0"]})
    assert swapped.status_code == 400 and b"another sound" in swapped.content
    token = json.loads(receipts["receipt-1"])["token"]
    guess = json.dumps({"side": "1", "token": token, "bytes": audio_proof.answer_for(bytes(10**6), token)})
    assert client.post(submit, {**right, "receipt-0": receipts["receipt-0"], "receipt-1": guess}).status_code == 400
    attempt.refresh_from_db()
    assert attempt.passed is None
    assert client.post(submit, {**right, **receipts}).status_code == 302
    attempt.refresh_from_db()
    assert attempt.passed is True
