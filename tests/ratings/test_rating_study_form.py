"""The study form offers the task type, the dimensions to rate and the rating items (clip sets), and refuses bad ones whole."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Study
from annotation.ratings.models import RatingItem, RatingItemClip, RatingTask
from tests.factories import ClipFactory, PairFactory, UserFactory

pytestmark = pytest.mark.django_db

BASE = {"title": "Rated", "overlap_target": 2, "overlap_share": 1.0, "min_listen_seconds": 5, "rationale_min_length": 0, "lock_ttl_seconds": 600, "gold_rate": 0.0,
        "annotator_target": 0, "selection": "random", "active_share": 0.0, "licence": "CC BY 4.0", "is_active": "on"}


@pytest.fixture
def client():
    c = Client()
    c.force_login(UserFactory(username="maker", roles=["researcher"]))
    return c


def test_the_new_study_page_offers_task_type_dimensions_and_clip_sets(client):
    page = client.get(reverse("study-create")).content.decode()
    for needle in ('name="task_type"', 'value="acr"', 'value="multi"', 'name="rating_dimensions"', 'name="clip_sets"'):
        assert needle in page
    study = Study.objects.create(name="old", licence="x")
    study.owner = UserFactory(username="owner2", roles=["researcher"])
    assert 'name="task_type"' not in client.get(reverse("study-edit", args=["old"])).content.decode()  # fixed once made


def test_an_acr_study_is_made_with_its_dimensions_and_items(client):
    clips = [ClipFactory() for _ in range(3)]
    known = PairFactory(clip_a=clips[0])
    lines = "\n".join([clips[0].sha256, f"{clips[1].sha256[:12]} | a calm piano piece", "# a comment", "", f"{clips[2].sha256.upper()} | loud"])
    response = client.post(reverse("study-create"), {**BASE, "name": "acr-made", "task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": lines})
    assert response.status_code == 302, response.content.decode()[:2000]
    task = RatingTask.objects.get(study__name="acr-made")
    assert task.task == "acr" and task.dimensions == ["musicality"]
    items = list(RatingItem.objects.filter(study=task.study).order_by("id"))
    assert [list(i.item_clips.values_list("clip_id", flat=True)) for i in items] == [[c.pk] for c in clips]
    assert items[0].condition == known.condition and items[1].condition.prompt == "a calm piano piece"


def test_a_multi_study_takes_a_hidden_reference_and_an_anchor(client):
    a, b, ref, low = (ClipFactory() for _ in range(4))
    line = f"{a.sha256} {b.sha256} ref={ref.sha256} anchor={low.sha256[:16]} | strings"
    response = client.post(reverse("study-create"), {**BASE, "name": "multi-made", "task_type": "multi", "rating_dimensions": ["musicality", "alignment"], "clip_sets": line})
    assert response.status_code == 302
    item = RatingItem.objects.get(study__name="multi-made")
    roles = dict(item.item_clips.values_list("clip_id", "role"))
    assert roles == {a.pk: RatingItemClip.Role.TEST, b.pk: RatingItemClip.Role.TEST, ref.pk: RatingItemClip.Role.REFERENCE, low.pk: RatingItemClip.Role.ANCHOR}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"task_type": "acr", "rating_dimensions": [], "clip_sets": ""}, "Pick at least one dimension"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "{a} {b}"}, "an acr item is exactly one clip"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "{a}"}, "give its prompt after a | sign"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "{a} ref={b}"}, "belongs to a multi-stimulus item"),
        ({"task_type": "multi", "rating_dimensions": ["musicality"], "clip_sets": "{a}"}, "shows 2 to 12 clips"),
        ({"task_type": "multi", "rating_dimensions": ["musicality"], "clip_sets": "{a} {a}"}, "a clip is named twice"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "0123456789abcdef"}, "no clip starts with"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "not-a-hash"}, "is not a clip&#x27;s sha256"),
        ({"task_type": "pairwise", "rating_dimensions": ["musicality"], "clip_sets": ""}, "acr and multi studies only"),
        ({"task_type": "pairwise", "clip_sets": "{a}"}, "Clip sets are rating items"),
        ({"task_type": "ranking"}, "Select a valid choice"),
    ],
)
def test_bad_rating_set_ups_are_refused_and_nothing_is_made(client, fields, message):
    a, b = ClipFactory(), ClipFactory()
    data = {**BASE, "name": "refused", **{k: (v.format(a=a.sha256, b=b.sha256) if isinstance(v, str) else v) for k, v in fields.items()}}
    response = client.post(reverse("study-create"), data)
    assert response.status_code == 200 and message in response.content.decode()
    assert not Study.objects.filter(name="refused").exists() and not RatingItem.objects.exists()


def test_a_pairwise_study_is_made_as_before(client):
    response = client.post(reverse("study-create"), {**BASE, "name": "plain"})
    assert response.status_code == 302 and Study.objects.filter(name="plain").exists() and not RatingTask.objects.exists()
