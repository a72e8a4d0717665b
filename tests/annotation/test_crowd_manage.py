"""The study page's practice pairs and recruitment links: named, opened and closed by those who may change the study; bad input stores nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.crowd_models import ExternalParticipant, PracticeAnswer, PracticeItem, RecruitmentLink
from annotation.models import Pair
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    owner = UserFactory(username="owner-r", roles=["researcher"])
    study = StudyFactory(name="crowdpage", owner=owner)
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD)
    gold.expected_alignment, gold.expected_musicality = gold.clip_a, gold.clip_b
    gold.save()
    PairFactory(study=study)  # regular: never offered as practice
    return study, owner, gold


def _page(client, study):
    return client.get(reverse("study-manage", kwargs={"name": study.name}))


def test_a_researcher_names_sees_and_removes_practice_pairs(client, study):
    study, owner, gold = study
    regular = Pair.objects.get(study=study, kind=Pair.Kind.REGULAR)
    client.force_login(owner)
    page = _page(client, study).content.decode()
    assert 'id="practice-form"' in page and f'value="{gold.pk}"' in page and f'value="{regular.pk}"' not in page
    add = reverse("study-practice-add", kwargs={"name": study.name})
    response = client.post(add, {"pair_id": gold.pk, "explanation": "A has the cello the prompt asks for."})
    assert response.status_code == 302 and response["Location"].endswith("#practice")
    item = PracticeItem.objects.get(study=study)
    # Moved, not copied: the gold pair leaves the study's pairs and is never served for real.
    assert not Pair.objects.filter(pk=gold.pk).exists()
    assert item.expected_alignment == gold.clip_a and item.explanation == "A has the cello the prompt asks for."
    page = _page(client, study).content.decode()
    assert "A has the cello the prompt asks for." in page and 'id="practice-items"' in page
    # The used gold pair is no longer offered; naming it again is refused.
    assert f'<option value="{gold.pk}"' not in page
    again = client.post(add, {"pair_id": gold.pk, "explanation": "again"})
    assert again.status_code == 400 and PracticeItem.objects.filter(study=study).count() == 1
    # Removing takes the practice answers given to it along.
    member = StudyAnnotatorFactory(study=study).annotator
    PracticeAnswer.objects.create(item=item, annotator=member, alignment_choice=gold.clip_a, musicality_choice=gold.clip_b, alignment_right=True, musicality_right=True)
    response = client.post(reverse("study-practice-remove", kwargs={"name": study.name, "item_id": item.pk}), follow=True)
    assert response.status_code == 200 and "with the 1 practice answer" in response.content.decode()
    assert not PracticeItem.objects.exists() and not PracticeAnswer.objects.exists()
    missing = client.post(reverse("study-practice-remove", kwargs={"name": study.name, "item_id": item.pk}))
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "body, message",
    [
        ({"explanation": "why"}, "Choose one of this study&#x27;s gold pairs."),
        ({"pair_id": "x", "explanation": "why"}, "Choose one of this study&#x27;s gold pairs."),
        ({"pair_id": "REGULAR", "explanation": "why"}, "gold or catch pairs with an expected answer"),
        ({"pair_id": "OTHER", "explanation": "why"}, "Choose one of this study&#x27;s gold pairs."),
        ({"pair_id": "GOLD", "explanation": "   "}, "Write the explanation shown after the answer."),
    ],
)
def test_bad_practice_input_is_refused_with_a_message_and_stores_nothing(client, study, body, message):
    study, owner, gold = study
    other_gold = PairFactory(study=StudyFactory(name="elsewhere"), kind=Pair.Kind.GOLD)
    ids = {"GOLD": gold.pk, "REGULAR": Pair.objects.get(study=study, kind=Pair.Kind.REGULAR).pk, "OTHER": other_gold.pk}
    body = {k: ids.get(v, v) for k, v in body.items()}
    client.force_login(owner)
    response = client.post(reverse("study-practice-add", kwargs={"name": study.name}), body)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not PracticeItem.objects.exists()


def test_a_researcher_opens_a_link_sees_its_use_and_closes_it(client, study):
    study, owner, _ = study
    client.force_login(owner)
    response = client.post(
        reverse("study-link-add", kwargs={"name": study.name}),
        {"label": "pilot", "cap": "2", "days": "3", "completion_url": "https://app.prolific.com/submissions/complete", "completion_code": "C0DE1", "screenout_code": "OUT2"},
    )
    assert response.status_code == 302 and response["Location"].endswith("#recruitment")
    link = RecruitmentLink.objects.get(study=study)
    assert (link.cap, link.completion_code, link.screenout_code, link.label) == (2, "C0DE1", "OUT2", "pilot")
    assert timedelta(days=2.99) < link.expires_at - timezone.now() <= timedelta(days=3)
    page = _page(client, study).content.decode()
    url = f"http://testserver/r/{link.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&amp;STUDY_ID={{{{%STUDY_ID%}}}}&amp;SESSION_ID={{{{%SESSION_ID%}}}}"
    assert url in page and "0 / 2" in page and ">open<" in page
    # Two participants fill it: its use count and state follow.
    for pid in ("p1", "p2"):
        client.logout()
        assert client.post(f"{reverse('recruitment-enter', kwargs={'token': link.token})}?PROLIFIC_PID={pid}", {}).status_code == 200
    client.force_login(owner)
    page = _page(client, study).content.decode()
    assert "2 / 2" in page and ">full<" in page
    response = client.post(reverse("study-link-close", kwargs={"name": study.name, "link_id": link.pk}))
    assert response.status_code == 302
    link.refresh_from_db()
    assert link.expires_at <= timezone.now()
    assert ">closed<" in _page(client, study).content.decode()
    # A closed link admits no one, not even a returning participant.
    client.logout()
    assert client.get(reverse("recruitment-enter", kwargs={"token": link.token}), {"PROLIFIC_PID": "p1"}).status_code == 410
    assert ExternalParticipant.objects.count() == 2


@pytest.mark.parametrize(
    "change, field_message",
    [
        ({"completion_code": ""}, "Enter the platform&#x27;s completion code."),
        ({"completion_code": "bad code!"}, "Letters, digits, - and _ only"),
        ({"cap": "0"}, "greater than or equal to 1"),
        ({"days": "0"}, "greater than or equal to 0.01"),
        ({"days": "900"}, "less than or equal to 365"),
        ({"completion_url": "javascript:alert(1)"}, "Enter a valid URL."),
        ({"signing_secret": "too-short"}, "16 to 128 printable ASCII characters, or empty for an unsigned link."),
    ],
)
def test_bad_link_input_is_refused_with_a_message_and_stores_nothing(client, study, change, field_message):
    study, owner, _ = study
    client.force_login(owner)
    body = {"cap": "10", "days": "7", "completion_url": "https://app.prolific.com/submissions/complete", "completion_code": "OK1", **change}
    response = client.post(reverse("study-link-add", kwargs={"name": study.name}), body)
    assert response.status_code == 400 and field_message in response.content.decode()
    assert not RecruitmentLink.objects.exists()


def test_a_researcher_opens_a_signed_link_and_sees_where_the_signature_goes(client, study):
    study, owner, _ = study
    client.force_login(owner)
    body = {"cap": "10", "days": "7", "completion_url": "https://app.prolific.com/submissions/complete", "completion_code": "OK1",
            "signing_secret": "  a-long-random-secret-0123456789  "}  # fmt: skip
    assert client.post(reverse("study-link-add", kwargs={"name": study.name}), body).status_code == 302
    link = RecruitmentLink.objects.get(study=study)
    assert link.signing_secret == "a-long-random-secret-0123456789"
    page = _page(client, study).content.decode()
    assert "SESSION_ID={{%SESSION_ID%}}&amp;sig=&lt;signature&gt;" in page and "signed (<code>sig</code>)" in page
    assert "a-long-random-secret-0123456789" not in page  # the page never shows the secret back


def test_only_those_who_may_change_the_study_name_practice_or_open_links(client, study):
    study, owner, gold = study
    outsider = UserFactory(username="other-r", roles=["researcher"])
    client.force_login(outsider)
    page = _page(client, study).content.decode()
    assert 'id="practice-form"' not in page and 'id="recruitment"' not in page
    assert client.post(reverse("study-practice-add", kwargs={"name": study.name}), {"pair_id": gold.pk, "explanation": "x"}).status_code == 403
    assert client.post(reverse("study-link-add", kwargs={"name": study.name}), {"cap": "5", "days": "1", "completion_url": "https://x.org/", "completion_code": "A"}).status_code == 403
    assert not PracticeItem.objects.exists() and not RecruitmentLink.objects.exists()
    link = RecruitmentLink.objects.create(study=study, completion_code="K", expires_at=timezone.now() + timedelta(days=1))
    assert client.post(reverse("study-link-close", kwargs={"name": study.name, "link_id": link.pk})).status_code == 403
    link.refresh_from_db()
    assert link.expires_at > timezone.now()
    # A collaborator may; a link of another study is not found from this one.
    study.collaborators.add(outsider)
    other = RecruitmentLink.objects.create(study=StudyFactory(name="elsewhere2"), completion_code="K", expires_at=timezone.now() + timedelta(days=1))
    assert client.post(reverse("study-link-close", kwargs={"name": study.name, "link_id": other.pk})).status_code == 404
    assert client.post(reverse("study-link-close", kwargs={"name": study.name, "link_id": link.pk})).status_code == 302
