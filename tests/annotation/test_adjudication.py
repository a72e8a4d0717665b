"""Adjudication: the queue (what is in it, why, in which order), deciding a pair (reason, listening, one decision),
who may reach it, and the provenance the export writes on a known case."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.access import clip_audible_by
from annotation.adjudication_models import Adjudication, StudyAdjudicator
from annotation.adjudication_selectors import adjudication_queue, provenance_of
from annotation.dataset import dataset_export
from annotation.dataset.keys import EXPORT_KEYS
from annotation.dataset.provenance import PROVENANCE_KEYS
from scoring.models import Judge, ScoringRun, Verdict
from tests.annotation.adjudication_world import build, receipts
from tests.factories import PairFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    w = build()
    judged = w["pairs"]["judged"]
    run = ScoringRun.objects.create(judge=Judge.objects.create(key="clap-judge", kind=Judge.Kind.SIGNAL), study=w["study"])
    Verdict.objects.create(run=run, pair=judged, status=Verdict.Status.OK, alignment_choice=judged.clip_b, musicality_choice=judged.clip_a, rationale="B fits the tempo")
    return w


def url(name, study, **kwargs):
    return reverse(name, kwargs={"name": study.name, **kwargs})


def test_provenance_rule():
    assert provenance_of(["clip_a"] * 3, adjudicated=False) == "unanimous"
    assert provenance_of(["clip_a"], adjudicated=False) == "unanimous"
    assert provenance_of(["clip_a", "clip_a", "clip_b"], adjudicated=False) == "majority"
    assert provenance_of(["clip_a", "clip_b"], adjudicated=False) == "unresolved"
    assert provenance_of(["clip_a", "clip_b", "both"], adjudicated=False) == "unresolved"
    assert provenance_of([], adjudicated=False) == "unresolved"
    assert provenance_of(["clip_a", "clip_b"], adjudicated=True) == "adjudicated"


def test_queue_holds_split_and_judge_conflicts_lowest_agreement_first(world):
    p = world["pairs"]
    items = adjudication_queue(study=world["study"])
    order = [i.pair_id for i in items]
    # The 1-1 tie (0.5) before the 2-1 split (0.67) before the unanimous pair the judge contradicts (1.0).
    assert order == [p["tied"].pk, p["split"].pk, p["judged"].pk]
    by_id = {i.pair_id: i for i in items}
    assert by_id[p["split"].pk].reasons == ["alignment: split vote (A 2 · B 1)"]
    assert by_id[p["judged"].pk].reasons == ["alignment: judge clap-judge against the human majority"]
    assert by_id[p["judged"].pk].judge["alignment_side"] == "B"
    # Agreeing pairs and single votes are not disputes.
    assert p["unanimous"].pk not in by_id and p["single"].pk not in by_id


def test_an_adjudicator_decides_with_a_reason_after_listening(client, world):
    study, pair, adjudicator = world["study"], world["pairs"]["split"], world["adjudicator"]
    client.force_login(adjudicator)
    page = client.get(url("study-adjudication-item", study, item_id=pair.pk))
    assert page.status_code == 200
    body = page.content.decode()
    assert "voter 0 on split" in body and "adjudication-form" in body
    fields = receipts(client, study, pair)
    # No reason: a form error, nothing written.
    refused = client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "A", "musicality": "tie", "reason": "  ", **fields})
    assert refused.status_code == 400 and "Give the reason" in refused.content.decode()
    # No receipts: the clips were never shown received.
    unheard = client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "A", "musicality": "tie", "reason": "A keeps the tempo"})
    assert unheard.status_code == 400 and "Listen to both clips" in unheard.content.decode()
    # A receipt for one side moved to the other does not count.
    swapped = {"receipt_A": fields["receipt_B"], "receipt_B": fields["receipt_A"]}
    assert client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "A", "musicality": "tie", "reason": "x", **swapped}).status_code == 400
    assert not Adjudication.objects.exists()
    done = client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "A", "musicality": "tie", "reason": "A keeps the tempo", **fields})
    assert done.status_code == 302
    decision = Adjudication.objects.get()
    assert (decision.pair_id, decision.alignment, decision.musicality, decision.reason) == (pair.pk, "clip_a", "tie", "A keeps the tempo")
    assert decision.evidence["answers"]["alignment"].count("clip_a") == 2
    # A second decision on the same pair is refused with the first one.
    again = client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "B", "musicality": "B", "reason": "no, B", **receipts(client, study, pair)})
    assert again.status_code == 409
    text = again.content.decode()
    assert "already decided" in text and "A keeps the tempo" in text
    assert Adjudication.objects.count() == 1
    # Decided pairs move below the open ones.
    assert [i.pair_id for i in adjudication_queue(study=study)][-1] == pair.pk


def test_a_pair_whose_votes_agree_cannot_be_decided(client, world):
    study, pair = world["study"], world["pairs"]["unanimous"]
    client.force_login(world["adjudicator"])
    response = client.post(url("study-adjudication-item", study, item_id=pair.pk), {"alignment": "A", "musicality": "A", "reason": "r", **receipts(client, study, pair)})
    assert response.status_code == 409 and "not in the adjudication queue" in response.content.decode()
    assert not Adjudication.objects.exists()


def test_who_reaches_the_queue_and_hears_its_clips(client, world):
    study, pair = world["study"], world["pairs"]["split"]
    other_pair = PairFactory()
    routes = [url("study-adjudication", study), url("study-adjudication-item", study, item_id=pair.pk)]
    audio = url("study-adjudication-audio", study, item_id=pair.pk, which="a")
    for stranger in (UserFactory(roles=["annotator"]), UserFactory(roles=["researcher"]), world["voters"][0]):
        client.force_login(stranger)
        assert [client.get(r).status_code for r in routes] == [403, 403]
        assert client.get(audio).status_code == 404
        assert client.post(routes[1], {"alignment": "A", "musicality": "A", "reason": "r"}).status_code == 403
    # The owner reads the queue but does not decide unless named an adjudicator.
    client.force_login(world["owner"])
    assert [client.get(r).status_code for r in routes] == [200, 200]
    posted = client.post(routes[1], {"alignment": "A", "musicality": "A", "reason": "r", **receipts(client, study, pair)})
    assert posted.status_code == 403 and not Adjudication.objects.exists()
    # The clip rule lets an adjudicator hear this study's clips, and no other study's.
    adjudicator = world["adjudicator"]
    assert clip_audible_by(user=adjudicator, clip=pair.clip_a)
    assert not clip_audible_by(user=adjudicator, clip=other_pair.clip_a)
    assert client.get(url("study-adjudication-audio", study, item_id=pair.pk, which="x")).status_code == 404


def test_the_owner_names_adjudicators_on_the_study_page(client, world):
    study, owner = world["study"], world["owner"]
    expert = UserFactory(username="expert1", roles=["annotator"])
    client.force_login(owner)
    page = client.get(reverse("study-manage", kwargs={"name": study.name}))
    assert 'id="adjudication-link"' in page.content.decode()
    bad = client.post(url("study-adjudicators", study), {"usernames": "expert1 nobody-here"}, follow=True)
    assert "No active account named nobody-here" in bad.content.decode()
    assert list(StudyAdjudicator.objects.filter(study=study).values_list("user", flat=True)) == [world["adjudicator"].pk]
    client.post(url("study-adjudicators", study), {"usernames": "expert1"})
    assert list(StudyAdjudicator.objects.filter(study=study).values_list("user__username", flat=True)) == ["expert1"]
    client.force_login(expert)
    assert f'href="{url("study-adjudication", study)}"' in client.get(reverse("home")).content.decode()
    # A researcher who may not change the study names no one.
    client.force_login(UserFactory(roles=["researcher"]))
    assert client.post(url("study-adjudicators", study), {"usernames": "expert1"}).status_code == 403


def test_export_marks_each_pair_with_its_provenance(client, tmp_path, world):
    study, p = world["study"], world["pairs"]
    client.force_login(world["adjudicator"])
    fields = receipts(client, study, p["split"])
    client.post(url("study-adjudication-item", study, item_id=p["split"].pk), {"alignment": "B", "musicality": "A", "reason": "B follows the brief", **fields})
    decision = Adjudication.objects.get()
    dataset_export(out_dir=tmp_path / "out", studies=[study])
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert all(list(r)[: len(EXPORT_KEYS)] == list(EXPORT_KEYS) and list(r)[-len(PROVENANCE_KEYS) - 1 :] == [*PROVENANCE_KEYS, "dimension_passes"] for r in rows)
    split_rows = [r for r in rows if r["feedback"].endswith("on split")]
    assert len(split_rows) == 3
    pseudonym = world["adjudicator"].annotator_profile.pseudonym
    for r in split_rows:
        assert (r["provenance-alignment"], r["provenance-musicality"]) == ("adjudicated", "adjudicated")
        assert (r["adjudicated_by"], r["adjudicated_at"]) == (pseudonym, decision.decided_at.isoformat().replace("+00:00", "Z"))
        # In the row's own terms: the voter who saw clip_b as A reads the decision for clip_b as model_a.
        shown_b_first = r["feedback"] == "voter 1 on split"
        assert r["adjudicated-alignment"] == ("model_a" if shown_b_first else "model_b")
        assert r["adjudicated-musicality"] == ("model_b" if shown_b_first else "model_a")
    others = [r for r in rows if not r["feedback"]]
    counts = sorted((r["provenance-alignment"], r["provenance-musicality"]) for r in others)
    # unanimous 3 rows, judged 3 rows (the judge does not change provenance), single 1 row, tied 2 rows.
    assert counts == sorted([("unanimous", "unanimous")] * 7 + [("unanimous", "unresolved")] * 2)
    assert all(r["adjudicated_by"] is None and r["adjudicated-alignment"] is None for r in others)
    assert "`provenance-<dimension>`" in (tmp_path / "out" / "README.md").read_text()


def test_the_queue_page_lists_the_disputes_in_order_in_pages(client, world, monkeypatch):
    from annotation import adjudication_views

    study, p = world["study"], world["pairs"]
    monkeypatch.setattr(adjudication_views, "QUEUE_PER_PAGE", 2)
    client.force_login(world["adjudicator"])
    first = client.get(url("study-adjudication", study)).content.decode()
    assert first.index(f'data-pair="{p["tied"].pk}"') < first.index(f'data-pair="{p["split"].pk}"')
    assert f'data-pair="{p["judged"].pk}"' not in first and "Page 1 of 2" in first and "3</strong> open" in first
    second = client.get(url("study-adjudication", study) + "?page=2").content.decode()
    assert f'data-pair="{p["judged"].pk}"' in second and "judge clap-judge against the human majority" in second
