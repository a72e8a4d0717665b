"""A small study for the adjudication tests: pairs with known votes, an adjudicator, and the form's audio receipts."""

from __future__ import annotations

import json
from decimal import Decimal

from django.urls import reverse

from annotation.adjudication_models import StudyAdjudicator
from annotation.models import Judgment
from common import audio_proof
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory


def vote(pair, voter, *, alignment: str, musicality: str, shown_a: str = "a", rationale: str = "") -> Judgment:
    """A vote in the pair's stored terms: "a" = clip_a wins; `shown_a` says which clip the voter saw as A."""
    clip = {"a": pair.clip_a, "b": pair.clip_b}
    return JudgmentFactory(
        pair=pair, annotator=voter, a_clip=clip[shown_a], alignment_choice=clip[alignment], musicality_choice=clip[musicality],
        alignment_confidence=Decimal("3.0"), musicality_confidence=Decimal("4.0"), rationale=rationale,
    )  # fmt: skip


def build(name: str = "adj") -> dict:
    """Pairs: `split` 2-1 on alignment, `unanimous` 3-0, `judged` 3-0 with a judge against it (added by the caller
    where needed), `single` one vote, `tied` 1-1 on musicality."""
    study = StudyFactory(name=name, min_listen_seconds=0.5)
    voters = [AnnotatorFactory() for _ in range(3)]
    pairs = {key: PairFactory(study=study) for key in ("split", "unanimous", "judged", "single", "tied")}
    for i, voter in enumerate(voters):
        vote(pairs["split"], voter, alignment="a" if i < 2 else "b", musicality="a", shown_a="a" if i != 1 else "b", rationale=f"voter {i} on split")
        vote(pairs["unanimous"], voter, alignment="b", musicality="b")
        vote(pairs["judged"], voter, alignment="a", musicality="a")
    vote(pairs["single"], voters[0], alignment="a", musicality="b")
    vote(pairs["tied"], voters[0], alignment="a", musicality="a")
    vote(pairs["tied"], voters[1], alignment="a", musicality="b")
    owner = UserFactory(roles=["researcher"])
    study.owner = owner
    study.save(update_fields=["owner"])
    adjudicator = UserFactory(roles=["annotator"])
    StudyAdjudicator.objects.create(study=study, user=adjudicator)
    from annotation.services.people import profile_ensure

    profile_ensure(user=adjudicator)
    return {"study": study, "pairs": pairs, "voters": voters, "owner": owner, "adjudicator": adjudicator}


def receipts(client, study, pair) -> dict:
    """Fetch both clips of the pair's adjudication page as `client`; the form's receipt fields, as the page fills them."""
    fields = {}
    for side in ("A", "B"):
        response = client.get(reverse("study-adjudication-audio", kwargs={"name": study.name, "item_id": pair.pk, "which": side.lower()}))
        assert response.status_code == 200, response.status_code
        body = b"".join(response.streaming_content) if response.streaming else response.content
        token = response[audio_proof.HEADER]
        fields[f"receipt_{side}"] = json.dumps({"side": side, "token": token, "bytes": audio_proof.answer_for(body, token)})
    return fields
