"""The one gate before a study's work (services.crowd_step / crowd_gate_check): the pages and the APIs of pairwise
and rating studies name the same step and refuse alike, with one error code."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd_models import ScreeningAttempt
from annotation.models import Pair
from common.errors import ServiceError
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.ratings_helpers import member, rating_study

pytestmark = pytest.mark.django_db


def _passed(study, user) -> None:
    ScreeningAttempt.objects.create(study=study, annotator=user, kind=study.screening, seed=1, trials=4, pass_mark=4, correct=4, passed=True)


def test_the_gate_goes_screen_then_practice_then_work():
    study = StudyFactory(name="gated", screening="huggins", screening_trials=4, screening_pass=4)
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD)
    gold.expected_alignment, gold.expected_musicality = gold.clip_a, gold.clip_b
    gold.save()
    item = services.practice_from_gold(pair=gold, explanation="A follows the instruction.")
    user = StudyAnnotatorFactory(study=study).annotator
    assert services.crowd_step(study=study, annotator=user) == "screening"
    with pytest.raises(ServiceError) as refused:
        services.crowd_gate_check(study=study, annotator=user)
    assert (refused.value.code, refused.value.status) == ("screening_required", 403)
    _passed(study, user)
    assert services.crowd_step(study=study, annotator=user) == "practice"
    services.crowd_gate_check(study=study, annotator=user)  # practice guides the page; the API does not wait for it
    services.practice_answer(item_id=item.pk, study=study, annotator=user, shown_a="a", alignment="A", musicality="A")
    assert services.crowd_step(study=study, annotator=user) is None


@pytest.mark.parametrize("kind", ["pairwise", "rating"])
def test_pages_and_apis_of_both_study_kinds_use_the_one_gate(client, kind):
    if kind == "pairwise":
        study = StudyFactory(name="gated-pairs", screening="huggins", screening_trials=4, screening_pass=4)
        PairFactory(study=study)
        user = StudyAnnotatorFactory(study=study).annotator
        page, api = reverse("annotate", kwargs={"name": study.name}), reverse("api-assignment-next", kwargs={"name": study.name})
    else:
        study = rating_study(task="acr", items=1, screening="huggins")
        user = member(study)
        page, api = reverse("ratings:rate", kwargs={"name": study.name}), reverse("ratings:api-next", kwargs={"name": study.name})
    client.force_login(user)
    assert client.get(page)["Location"] == reverse("screening", kwargs={"name": study.name})
    refused = client.post(api, content_type="application/json")
    assert refused.status_code == 403 and refused.json()["code"] == "screening_required"
    _passed(study, user)
    assert client.get(page).status_code == 200
    assert client.post(api, content_type="application/json").json()["assignment"] is not None
