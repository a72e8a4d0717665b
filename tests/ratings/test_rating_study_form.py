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
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "gold {a} | p"}, "a gold item needs the range of at least one clip"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "{a} musicality=4-5 | p"}, "only a gold or trap item has expected ranges"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "gold {a} alignment=4-5 | p"}, "nor a dimension this study asks (musicality)"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "trap {a} musicality=4-7 | p"}, "within the scale 1-5"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "trap {a} musicality=five | p"}, "is not a range low-high"),
        ({"task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": "gold musicality=4-5 {a} | p"}, "follows no clip"),
        ({"task_type": "multi", "rating_dimensions": ["musicality"], "clip_sets": "gold {a} {b} musicality=80-120 | p"}, "within the scale 0-100"),
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


def test_gold_and_trap_lines_make_check_items_with_their_expected_ranges(client):
    good, bad, plain = ClipFactory(), ClipFactory(), ClipFactory()
    lines = "\n".join([
        f"gold {good.sha256} musicality=4-5 alignment=3.5-5 | a clean piano take",
        f"TRAP {bad.sha256[:12]} musicality=1-1 | this clip asks for Bad",
        f"{plain.sha256} | an ordinary item",
    ])
    response = client.post(reverse("study-create"), {**BASE, "name": "checked", "task_type": "acr", "rating_dimensions": ["musicality", "alignment"], "clip_sets": lines})
    assert response.status_code == 302, response.content.decode()[:2000]
    items = {i.item_clips.get().clip_id: i for i in RatingItem.objects.filter(study__name="checked")}
    assert items[good.pk].kind == "gold" and items[good.pk].expected == {str(good.pk): {"musicality": [4.0, 5.0], "alignment": [3.5, 5.0]}}
    assert items[bad.pk].kind == "trap" and items[bad.pk].expected == {str(bad.pk): {"musicality": [1.0, 1.0]}}
    assert items[plain.pk].kind == "regular" and items[plain.pk].expected == {}
    # Check items are asked of many raters, not the study's overlap.
    assert items[good.pk].overlap > items[plain.pk].overlap


def test_a_multi_gold_line_puts_each_range_on_the_clip_before_it(client):
    a, b, ref = ClipFactory(), ClipFactory(), ClipFactory()
    line = f"gold {a.sha256} {b.sha256} musicality=0-40 ref={ref.sha256} musicality=90-100 | strings"
    response = client.post(reverse("study-create"), {**BASE, "name": "multi-gold", "task_type": "multi", "rating_dimensions": ["musicality"], "clip_sets": line})
    assert response.status_code == 302, response.content.decode()[:2000]
    item = RatingItem.objects.get(study__name="multi-gold")
    assert item.kind == "gold" and item.expected == {str(b.pk): {"musicality": [0.0, 40.0]}, str(ref.pk): {"musicality": [90.0, 100.0]}}


def _rating_study_owned_by(client, name: str) -> Study:
    clip = ClipFactory()
    response = client.post(reverse("study-create"), {**BASE, "name": name, "task_type": "acr", "rating_dimensions": ["musicality"], "clip_sets": f"{clip.sha256} | first"})
    assert response.status_code == 302
    return Study.objects.get(name=name)


def test_the_edit_page_of_a_rating_study_adds_items_and_keeps_the_task(client):
    study = _rating_study_owned_by(client, "grows")
    page = client.get(reverse("study-edit", args=["grows"])).content.decode()
    assert 'name="clip_sets"' in page and "Add rating items (acr: musicality)" in page and 'name="task_type"' not in page
    new, gold = ClipFactory(), ClipFactory()
    lines = f"{new.sha256} | second\ngold {gold.sha256} musicality=4-5 | known good"
    response = client.post(reverse("study-edit", args=["grows"]), {**BASE, "name": "grows", "title": "Grown", "clip_sets": lines}, follow=True)
    assert "2 rating item(s) added" in response.content.decode()
    study.refresh_from_db()
    assert study.title == "Grown" and RatingItem.objects.filter(study=study).count() == 3
    assert RatingItem.objects.get(study=study, kind="gold").expected == {str(gold.pk): {"musicality": [4.0, 5.0]}}
    assert RatingTask.objects.get(study=study).task == "acr"


def test_an_edit_whose_item_is_refused_saves_nothing(client):
    study = _rating_study_owned_by(client, "stays")
    first = RatingItem.objects.get(study=study).item_clips.get().clip
    other = ClipFactory()
    # The second line repeats an item the study already rates: the whole edit is refused, title included.
    lines = f"{other.sha256} | new\n{first.sha256} | first"
    response = client.post(reverse("study-edit", args=["stays"]), {**BASE, "name": "stays", "title": "Changed", "clip_sets": lines})
    assert response.status_code == 200 and "Item 2: This study already rates these clips" in response.content.decode()
    study.refresh_from_db()
    assert study.title == "Rated" and RatingItem.objects.filter(study=study).count() == 1


def test_a_pairwise_study_edit_offers_no_rating_items(client):
    client.post(reverse("study-create"), {**BASE, "name": "pairs"})
    page = client.get(reverse("study-edit", args=["pairs"])).content.decode()
    assert 'name="clip_sets"' not in page
    clip = ClipFactory()
    response = client.post(reverse("study-edit", args=["pairs"]), {**BASE, "name": "pairs", "clip_sets": f"{clip.sha256} | x"})
    assert response.status_code == 302 and not RatingItem.objects.exists()
