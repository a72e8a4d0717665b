"""The rating API and pages: payload hides what must stay hidden, the server refuses unheard clips, the pairwise gate applies."""

import json

import pytest
from django.urls import reverse

from annotation.models import Study
from annotation.ratings import services
from annotation.ratings.models import RatingAssignment, RatingItem, RatingItemClip
from scoring.report import ReportOptions, report_build
from tests.ratings_helpers import answer_for, listen_all, member, rating_study

pytestmark = pytest.mark.django_db


def _client(client, user):
    client.force_login(user)
    return client


def test_pairwise_link_leads_to_the_rating_page_and_the_page_loads(client):
    study = rating_study(task="acr", items=1)
    user = member(study)
    _client(client, user)
    response = client.get(reverse("annotate", kwargs={"name": study.name}))
    assert response.status_code == 302 and response["Location"] == reverse("ratings:rate", kwargs={"name": study.name})
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"rate.js" in page.content


def test_the_headphone_screen_comes_first_for_rating_studies_too(client):
    study = rating_study(task="multi", items=1, screening="huggins")
    user = member(study)
    _client(client, user)
    page = client.get(reverse("ratings:rate", kwargs={"name": study.name}))
    assert page.status_code == 302 and page["Location"] == reverse("screening", kwargs={"name": study.name})
    api = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json")
    assert api.status_code == 403 and not RatingAssignment.objects.exists()


def test_payload_never_reveals_roles_kinds_or_systems(client):
    """Flip the hidden facts (which clip is the reference or anchor, the item's kind, system names): the page's answer is the same bytes."""
    study = rating_study(task="multi", items=1, clips_per_item=2, reference=True, anchor=True)
    user = member(study)
    _client(client, user)
    url = reverse("ratings:api-next", kwargs={"name": study.name})
    before = client.post(url, content_type="application/json").content
    item = RatingItem.objects.get(study=study)
    roles = list(item.item_clips.order_by("id"))
    for link, role in zip(roles, ["anchor", "reference", "test", "test"]):
        RatingItemClip.objects.filter(pk=link.pk).update(role=role)
    RatingItem.objects.filter(pk=item.pk).update(kind="gold", expected={str(roles[0].clip_id): {"musicality": [0, 10]}})
    for link in roles:
        link.clip.system.name = f"renamed-{link.clip.system.pk}"
        link.clip.system.save()
    after = client.post(url, content_type="application/json").content
    assert before == after
    payload = json.loads(after)["assignment"]
    assert [c["label"] for c in payload["clips"]] == ["A", "B", "C", "D"]
    assert "reference" not in json.dumps(payload["clips"]) and "system" not in json.dumps(payload)


def test_submit_of_an_unheard_clip_is_a_clear_400_and_audio_is_served_only_to_the_assigned(client):
    study = rating_study(task="acr", items=1)
    user, other = member(study), member(study)
    _client(client, user)
    payload = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    submit = reverse("ratings:api-submit", kwargs={"assignment_id": payload["id"]})
    body = {"idempotency_key": "k1", "ratings": {"A": {"musicality": 4, "alignment": 3}}}
    refused = client.post(submit, body, content_type="application/json")
    assert refused.status_code == 400 and "Listen to clip A" in refused.content.decode()
    audio_url = payload["clips"][0]["url"]
    assert client.get(audio_url).status_code == 200
    client.force_login(other)
    assert client.get(audio_url).status_code == 404


def test_report_has_a_ratings_section_with_mos_and_agreement():
    study = rating_study(task="acr", items=3, overlap_target=3, dimensions=("musicality",))
    for value in (2, 3, 4):
        user = member(study)
        while (a := services.rating_next(study=study, annotator=user)) is not None:
            listen_all(a)
            services.rating_submit(assignment_id=a.pk, annotator=user, ratings=answer_for(a, value), idempotency_key=f"{user.pk}-{a.pk}")
    report = report_build(study=Study.objects.get(pk=study.pk), options=ReportOptions(rounds=50), use_cache=False)
    section = report["ratings"]
    assert section["ratings"] == 9 and section["raters"] == 3 and section["clips"] == 3
    assert {row["mos"] for row in section["mos_clips"]} == {3.0}
    assert section["agreement"][0]["icc"]["k"] == 3


def test_home_progress_counts_rated_items(client):
    from annotation.selectors import annotator_progress

    study = rating_study(task="acr", items=2, overlap_target=1)
    user = member(study)
    assert annotator_progress(study=study, annotator=user) == {"done": 0, "target": 2, "planned": 2, "left": 2, "state": "open", "unit": "clips"}
    a = services.rating_next(study=study, annotator=user)
    listen_all(a)
    services.rating_submit(assignment_id=a.pk, annotator=user, ratings=answer_for(a), idempotency_key="h1")
    assert annotator_progress(study=study, annotator=user)["done"] == 1
    _client(client, user)
    home = client.get(reverse("home")).content.decode()
    assert f'data-progress="{study.name}">1 of 2 ' in home and reverse("annotate", kwargs={"name": study.name}) in home
