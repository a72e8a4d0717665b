"""The echo of the first answer in the second: separates independent dimensions from copied ones, and a study asked
on separate screens from one asked on one screen holding the same pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.models import DimensionPasses, Pair
from scoring.passes import echo_measure, passes_section
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory


def simulate(kind: str, *, seed: int, conditions: int = 40, people: int = 30, per_pair: int = 3, copy: float = 0.8) -> pd.DataFrame:
    """Votes on one pair per condition, `per_pair` annotators each. Each pair has its own chance that clip 1 wins on
    each dimension; "independent" draws the two apart, "shared" gives both dimensions the same chance (clips good on
    both, no copying), "copied" repeats the alignment answer for musicality with probability `copy`."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(conditions):
        q_align = rng.uniform(0.1, 0.9)
        q_music = q_align if kind == "shared" else rng.uniform(0.1, 0.9)
        for person in rng.choice(people, size=per_pair, replace=False):
            alignment = int(rng.random() < q_align)
            musicality = alignment if kind == "copied" and rng.random() < copy else int(rng.random() < q_music)
            rows.append({"annotator_id": int(person), "condition_id": c, "pair_key": f"p{c}", "alignment": alignment, "musicality": musicality})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kind", ["independent", "shared", "copied"])
def test_kappa_is_sklearns(kind):
    frame = simulate(kind, seed=3)
    figures = echo_measure(frame, rounds=50, seed=0)
    assert figures["kappa"]["value"] == pytest.approx(cohen_kappa_score(frame["alignment"], frame["musicality"]), abs=1e-4)
    assert figures["same_side"]["value"] == pytest.approx((frame["alignment"] == frame["musicality"]).mean(), abs=1e-4)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_independent_and_copied_dimensions_are_told_apart(seed):
    independent = echo_measure(simulate("independent", seed=seed), rounds=300, seed=seed)
    copied = echo_measure(simulate("copied", seed=seed + 100), rounds=300, seed=seed)
    low, high = independent["kappa"]["ci"]
    assert low < 0 < high, independent["kappa"]
    assert copied["kappa"]["ci"][0] > high and copied["kappa"]["value"] > 0.6
    assert copied["same_side"]["ci"][0] > independent["same_side"]["ci"][1]
    # Both intervals (people, conditions) are real intervals around the figure.
    for figure in (independent, copied):
        for key in ("ci", "ci_conditions"):
            assert figure["kappa"][key][0] <= figure["kappa"]["value"] <= figure["kappa"][key][1]


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_clips_good_on_both_dimensions_are_not_taken_for_an_echo(seed):
    """Clips that are better on both dimensions make the answers agree with no copying: kappa rises, but the
    same-side share across people rises with it, so the excess stays near zero; copying leaves a clear excess."""
    shared = echo_measure(simulate("shared", seed=seed, conditions=120), rounds=100, seed=seed)
    copied = echo_measure(simulate("copied", seed=seed, conditions=120), rounds=100, seed=seed)
    assert shared["kappa"]["value"] > 0.1
    assert abs(shared["excess"]) < 0.08, shared
    assert copied["excess"] > 0.2, copied
    assert shared["across_people"]["pairs"] == 120


def test_no_votes_no_figures():
    assert echo_measure(pd.DataFrame(columns=["annotator_id", "condition_id", "pair_key", "alignment", "musicality"])) is None


@pytest.mark.django_db
def test_the_report_shows_both_ways_of_asking_on_the_pairs_two_studies_share():
    rng = np.random.default_rng(5)
    separate = StudyFactory(name="asked-apart", dimension_passes=DimensionPasses.SEPARATE)
    together = StudyFactory(name="asked-together")
    people = {name: [AnnotatorFactory() for _ in range(8)] for name in ("apart", "together")}
    for c in range(12):
        condition, clips = ConditionFactory(), (ClipFactory(), ClipFactory())
        pairs = {study.pk: PairFactory(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1]) for study in (separate, together)}
        for name, study in (("apart", separate), ("together", together)):
            pair = pairs[study.pk]
            for person in people[name]:
                first = clips[int(rng.random() < 0.5)]
                # One screen: the musicality answer mostly repeats the first; separate screens: drawn on its own.
                second = first if name == "together" and rng.random() < 0.9 else clips[int(rng.random() < 0.5)]
                passes = {"order": ["alignment", "musicality"], "steps": []} if name == "apart" else {}
                JudgmentFactory(annotator=person, pair=pair, alignment_choice=first, musicality_choice=second, passes=passes)
    # A gold pair and a tie are left out.
    gold = PairFactory(study=separate, kind=Pair.Kind.GOLD)
    JudgmentFactory(annotator=people["apart"][0], pair=gold, passes={"order": ["alignment", "musicality"]})

    section = passes_section(study=separate, rounds=200, seed=2)
    assert section["companion"] == "asked-together"
    own = [r for r in section["rows"] if r["scope"].startswith("this study")]
    assert [(r["group"], r["votes"]) for r in own] == [("separate screens", 96)]
    shared = [r for r in section["rows"] if "shared" in r["scope"]]
    assert [r["mode"] for r in shared] == ["separate", "together"] and all(r["votes"] == 96 for r in shared)
    assert shared[0]["group"] == "this study (separate screens)" and shared[1]["group"] == "asked-together (one screen)"
    difference = section["differences"][0]
    assert difference["scope"] == "12 pairs shared with asked-together"
    assert difference["kappa"]["ci"][1] < 0, difference
    # Seen from the other study, the same comparison, the other way round.
    back = passes_section(study=together, rounds=50, seed=2)
    assert back["companion"] == "asked-apart" and back["rows"][0]["group"] == "one screen"


@pytest.mark.django_db
def test_the_report_page_shows_the_section(client):
    from django.urls import reverse

    from scoring.report import report_build
    from tests.factories import UserFactory

    study = StudyFactory(name="echo-page", dimension_passes=DimensionPasses.SEPARATE)
    people = [AnnotatorFactory() for _ in range(3)]
    for _ in range(4):
        pair = PairFactory(study=study)
        for person in people:
            JudgmentFactory(annotator=person, pair=pair, musicality_choice=pair.clip_b, passes={"order": ["alignment", "musicality"]})
    report = report_build(study=study, use_cache=False)
    row = report["passes"]["rows"][0]
    assert row["group"] == "separate screens" and row["same_side"]["value"] == 0.0 and row["votes"] == 12
    study.owner = UserFactory(username="echo-owner", roles=["researcher"])
    study.save(update_fields=["owner"])
    client.force_login(study.owner)
    page = client.get(reverse("scoring:study-report", kwargs={"name": study.name}))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="passes"' in text and "Does the second answer echo the first?" in text and "separate screens" in text
