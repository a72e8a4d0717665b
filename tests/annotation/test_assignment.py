"""Assignment engine rules and the annotator API."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, Judgment, Pair
from common.errors import ServiceError
from tests.factories import AnnotatorFactory, ConditionFactory, PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import listen

pytestmark = pytest.mark.django_db

GOOD_LOG = {"A": {"plays": 1, "seconds": 3.0}, "B": {"plays": 1, "seconds": 3.0}, "switches": 2}


def make_study(n_pairs=4, overlap=2, **kwargs):
    kwargs.setdefault("min_listen_seconds", 2.0)
    study = StudyFactory(overlap_target=overlap, overlap_share=1.0, **kwargs)
    pairs = [PairFactory(study=study, overlap=overlap) for _ in range(n_pairs)]
    return study, pairs


def member(study, **kwargs):
    return StudyAnnotatorFactory(study=study, **kwargs).annotator


def submit(assignment, annotator, *, key=None, now=None, heard=3.0, **overrides):
    """Submit after the server recorded `heard` seconds of each clip (None: record nothing more)."""
    if heard is not None and not Assignment.objects.get(pk=assignment.pk).listening:
        listen(assignment, seconds=heard)
    data = dict(
        assignment_id=assignment.pk,
        annotator=annotator,
        alignment="A",
        alignment_confidence="3.5",
        musicality="B",
        musicality_confidence=4,
        rationale="A follows the tempo; B is cleaner at 0:02.",
        listening_log=GOOD_LOG,
        time_on_page_ms=9000,
        idempotency_key=key or f"k-{assignment.pk}-{annotator.pk}",
        now=now or assignment.served_at + timedelta(seconds=10),
    )
    data.update(overrides)
    return services.judgment_submit(**data)


def test_same_locked_pair_comes_back_until_the_lock_expires():
    study, _ = make_study()
    user = member(study)
    first = services.assignment_next(study=study, annotator=user)
    again = services.assignment_next(study=study, annotator=user)
    assert first.pk == again.pk
    later = services.assignment_next(study=study, annotator=user, now=first.lock_expires_at + timedelta(seconds=1))
    assert later is not None and later.pk != first.pk


def test_never_more_locks_plus_judgments_than_overlap():
    study, pairs = make_study(n_pairs=1, overlap=2)
    users = [member(study) for _ in range(3)]
    got = [services.assignment_next(study=study, annotator=u) for u in users]
    assert [g is not None for g in got] == [True, True, False]


def test_expired_locks_are_reclaimed_by_others():
    study, pairs = make_study(n_pairs=1, overlap=1)
    first, second = member(study), member(study)
    held = services.assignment_next(study=study, annotator=first)
    assert services.assignment_next(study=study, annotator=second) is None
    later = held.lock_expires_at + timedelta(seconds=1)
    taken = services.assignment_next(study=study, annotator=second, now=later)
    assert taken is not None and taken.pair_id == held.pair_id


def test_never_a_pair_already_judged_in_either_order_even_across_studies():
    study, (pair,) = make_study(n_pairs=1, overlap=3)
    user = member(study)
    assignment = services.assignment_next(study=study, annotator=user)
    submit(assignment, user)
    # The same two clips under the same condition, stored in the other order in another study.
    other = StudyFactory(overlap_target=3, overlap_share=1.0)
    Pair.objects.create(study=other, condition=pair.condition, clip_a=pair.clip_b, clip_b=pair.clip_a, clip_key=pair.clip_key, overlap=3)
    StudyAnnotatorFactory(study=other, annotator=user)
    assert services.assignment_next(study=study, annotator=user) is None
    assert services.assignment_next(study=other, annotator=user) is None


def test_pair_order_is_reproducible_per_annotator_seed():
    study, pairs = make_study(n_pairs=12, overlap=5)

    def order(seed):
        user = member(study, seed=seed)
        seen = []
        while (a := services.assignment_next(study=study, annotator=user)) is not None:
            seen.append(a.pair_id)
            services.assignment_skip(assignment=a, annotator=user, reason="testing order")
        return seen

    first, second, other = order(42), order(42), order(7)
    assert first == second
    assert sorted(first) == sorted(p.pk for p in pairs)
    assert first != other


def test_side_is_randomised_and_answers_are_side_corrected():
    study, pairs = make_study(n_pairs=16, overlap=1)
    user = member(study)
    shown_a_first = 0
    for _ in pairs:
        a = services.assignment_next(study=study, annotator=user)
        shown_a_first += a.a_clip_id == a.pair.clip_a_id
        submit(a, user)  # chooses screen side A for alignment, B for musicality
        j = Judgment.objects.get(assignment=a)
        assert j.alignment_choice_id == a.a_clip_id
        assert j.musicality_choice_id == a.pair.other_clip_id(a.a_clip_id)
        assert j.a_clip_id == a.a_clip_id
    assert 0 < shown_a_first < 16


def test_submit_is_idempotent_and_double_submit_stores_one():
    study, _ = make_study(n_pairs=2)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    first, created = submit(a, user, key="same")
    again, created_again = submit(a, user, key="same")
    assert created and not created_again and first == again
    with pytest.raises(ServiceError) as exc:
        submit(a, user, key="different")
    assert exc.value.code == "already_submitted"
    assert Judgment.objects.filter(pair=a.pair, annotator=user).count() == 1


@pytest.mark.parametrize(
    "log, code",
    [
        ({"A": {"plays": 1, "seconds": -3}, "B": {"plays": 1, "seconds": 3}}, "bad_log"),
        ({"A": {"plays": 1, "seconds": 3}}, "bad_log"),
        ("nonsense", "bad_log"),
    ],
)
def test_a_malformed_page_log_is_refused(log, code):
    study, _ = make_study(n_pairs=1)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    with pytest.raises(ServiceError) as exc:
        submit(a, user, listening_log=log)
    assert exc.value.code == code
    assert not Judgment.objects.exists()
    assert Assignment.objects.get(pk=a.pk).state == Assignment.State.ACTIVE


def test_the_page_log_decides_nothing_the_server_record_does():
    study, _ = make_study(n_pairs=2)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    # A page claiming five minutes per clip, with nothing recorded by the server: refused.
    claims = {"A": {"plays": 9, "seconds": 300}, "B": {"plays": 9, "seconds": 300}, "switches": 9}
    with pytest.raises(ServiceError) as exc:
        submit(a, user, listening_log=claims, heard=None)
    assert exc.value.code == "listening_too_short"
    assert "clip A (0.0 s of 2 s; its audio was never fetched" in exc.value.message
    # A page claiming nothing, after the server recorded real listening: accepted, and the
    # judgment keeps the server's seconds, with the page's claim beside them.
    listen(a, seconds=3.0)
    submit(a, user, listening_log={"A": {"plays": 0, "seconds": 0}, "B": {"plays": 0, "seconds": 0}}, heard=None)
    log = Judgment.objects.get(assignment=a).listening_log
    assert log["source"] == "server" and log["A"]["seconds"] == 3.5 and log["B"]["seconds"] == 3.0
    assert log["client"]["A"]["seconds"] == 0


@pytest.mark.parametrize("value", ["0.5", "5.5", "3.3", "abc", None])
def test_confidence_must_be_half_steps_from_1_to_5(value):
    study, _ = make_study(n_pairs=1)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    with pytest.raises(ServiceError) as exc:
        submit(a, user, alignment_confidence=value)
    assert exc.value.code == "bad_confidence"


def test_rationale_minimum_is_enforced():
    study, _ = make_study(n_pairs=1, rationale_min_length=200)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    with pytest.raises(ServiceError) as exc:
        submit(a, user)
    assert exc.value.code == "rationale_too_short"


def test_a_study_rule_changed_while_a_pair_is_open_applies_to_its_submit():
    # The submit reads the study's rules in its locking query: a change made after the pair
    # was served is the one that counts, with no cache in between.
    study, _ = make_study(n_pairs=1)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    study.rationale_min_length = 50
    study.save()
    with pytest.raises(ServiceError) as exc:
        submit(a, user)
    assert exc.value.code == "rationale_too_short" and "at least 50 characters" in exc.value.message
    study.rationale_min_length = 0
    study.min_listen_seconds = 60.0
    study.save()
    with pytest.raises(ServiceError) as exc:
        submit(a, user)
    assert exc.value.code == "listening_too_short"


def test_late_submit_refused_when_the_slot_went_to_someone_else():
    study, _ = make_study(n_pairs=1, overlap=1)
    slow, fast = member(study), member(study)
    a = services.assignment_next(study=study, annotator=slow)
    later = a.lock_expires_at + timedelta(seconds=5)
    b = services.assignment_next(study=study, annotator=fast, now=later)
    assert b.pair_id == a.pair_id
    with pytest.raises(ServiceError) as exc:
        submit(a, slow, now=later + timedelta(seconds=1))
    assert exc.value.code == "lock_expired"
    submit(b, fast, now=later + timedelta(seconds=10))
    assert Judgment.objects.filter(pair=a.pair).count() == 1


def test_late_submit_accepted_when_the_slot_is_still_free():
    study, _ = make_study(n_pairs=1, overlap=1)
    user = member(study)
    a = services.assignment_next(study=study, annotator=user)
    answer, created = submit(a, user, now=a.lock_expires_at + timedelta(seconds=30))
    assert created


def test_consent_and_membership_are_required():
    study, _ = make_study(n_pairs=1)
    outsider = AnnotatorFactory()
    with pytest.raises(ServiceError) as exc:
        services.assignment_next(study=study, annotator=outsider)
    assert exc.value.code == "not_member"
    user = member(study)
    services.consent_withdraw(user=user)
    services.study_annotator_add(study=study, user=user)
    with pytest.raises(ServiceError) as exc:
        services.assignment_next(study=study, annotator=user)
    assert exc.value.code == "consent_required"


def test_gold_pairs_are_served_at_the_study_rate():
    study = StudyFactory(overlap_target=1, overlap_share=0.0, gold_rate=0.25)
    regular = [PairFactory(study=study) for _ in range(60)]
    gold = [PairFactory(study=study, kind=Pair.Kind.GOLD) for _ in range(60)]
    user = member(study)
    kinds = []
    for _ in range(40):
        a = services.assignment_next(study=study, annotator=user)
        kinds.append(a.pair.kind)
        services.assignment_skip(assignment=a, annotator=user, reason="rate check")
    share = kinds.count(Pair.Kind.GOLD) / len(kinds)
    assert 0.05 <= share <= 0.5, share
    assert len(regular) == len(gold)


def test_overlap_share_sets_overlap_on_a_share_of_pairs():
    study = StudyFactory(overlap_target=3, overlap_share=0.3)
    condition = ConditionFactory()
    from tests.factories import ClipFactory

    clips = [ClipFactory() for _ in range(25)]
    pairs = [services.pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1])[0] for i in range(24)]
    overlaps = [p.overlap for p in pairs]
    assert set(overlaps) <= {1, 3}
    assert 2 <= overlaps.count(3) <= 14
    # (B, A) finds the stored (A, B).
    again, created = services.pair_get_or_create(study=study, condition=condition, clip_a=clips[1], clip_b=clips[0])
    assert not created and again.pk == pairs[0].pk


# --- API -----------------------------------------------------------------------------


def api_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_api_next_payload_hides_identities_and_resumes():
    study, pairs = make_study(n_pairs=2)
    user = member(study)
    client = api_for(user)
    r = client.post(reverse("api-assignment-next", kwargs={"name": study.name}))
    assert r.status_code == 200
    body = r.json()["assignment"]
    text = r.content.decode()
    for pair in pairs:
        for clip in (pair.clip_a, pair.clip_b):
            assert clip.system.name not in text
            assert clip.sha256 not in text
    assert "kind" not in text and "gold" not in text
    assert set(body["clips"]) == {"A", "B"}
    again = client.post(reverse("api-assignment-next", kwargs={"name": study.name})).json()["assignment"]
    assert again["id"] == body["id"]


def test_api_submit_validation_and_idempotent_replay():
    study, _ = make_study(n_pairs=1, min_listen_seconds=0.0)
    user = member(study)
    client = api_for(user)
    body = client.post(reverse("api-assignment-next", kwargs={"name": study.name})).json()["assignment"]
    url = reverse("api-judgment-submit", kwargs={"assignment_id": body["id"]})
    payload = {
        "idempotency_key": "abc-1",
        "alignment": "B",
        "alignment_confidence": 2.5,
        "musicality": "B",
        "musicality_confidence": 5,
        "rationale": "B is tighter.",
    }
    bad = client.post(url, {**payload, "alignment": "C"}, format="json")
    assert bad.status_code == 400 and "alignment" in bad.json()["detail"]
    first = client.post(url, payload, format="json")
    assert first.status_code == 201, first.json()
    second = client.post(url, payload, format="json")
    assert second.status_code == 200 and second.json() == first.json()
    assert Judgment.objects.count() == 1
    j = Judgment.objects.get()
    assert j.alignment_confidence == Decimal("2.5")


def test_api_other_annotators_cannot_touch_an_assignment():
    study, _ = make_study(n_pairs=1)
    owner, intruder = member(study), member(study)
    a = services.assignment_next(study=study, annotator=owner)
    client = api_for(intruder)
    r = client.post(reverse("api-assignment-skip", kwargs={"assignment_id": a.pk}), {"reason": "x"}, format="json")
    assert r.status_code == 404
    r = client.post(
        reverse("api-judgment-submit", kwargs={"assignment_id": a.pk}),
        {"idempotency_key": "z", "alignment": "A", "alignment_confidence": 3, "musicality": "A", "musicality_confidence": 3, "listening_log": GOOD_LOG},
        format="json",
    )
    assert r.status_code == 404
    assert not Judgment.objects.exists()


def test_api_requires_login():
    study, _ = make_study(n_pairs=1)
    r = APIClient().post(reverse("api-assignment-next", kwargs={"name": study.name}))
    assert r.status_code in (401, 403)


def test_openapi_schema_is_served():
    client = api_for(UserFactory())
    r = client.get(reverse("api-schema"))
    assert r.status_code == 200
    assert b"/api/assignments/{assignment_id}/judgment/" in r.content
