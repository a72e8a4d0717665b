"""Judges against a rating study's MOS: scores read from the judges' verdicts, figures in the report and in compare_judges."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.ratings import services
from annotation.ratings.models import RatingItem
from scoring import compare
from scoring.models import Judge, ScoringRun, Verdict
from scoring.ratings_report import ratings_section
from tests.factories import ConditionFactory, PairFactory, StudyFactory
from tests.ratings_helpers import listen_all, member, rating_study

pytestmark = pytest.mark.django_db


def test_judge_scores_from_verdicts_meet_the_mos_in_report_and_compare():
    study = rating_study(task="acr", items=6, overlap_target=1, dimensions=("musicality",))
    items = list(RatingItem.objects.filter(study=study).order_by("id"))
    clip_ids = [item.item_clips.get().clip_id for item in items]
    quality = dict(zip(clip_ids, [1, 2, 3, 4, 5, 5]))
    user = member(study)
    while (a := services.rating_next(study=study, annotator=user)) is not None:
        listen_all(a)
        services.rating_submit(assignment_id=a.pk, annotator=user, ratings={"A": {"musicality": quality[a.order[0]]}}, idempotency_key=str(a.pk))
    # A judge scored the same clips in pairs of another study: higher for better clips.
    run = ScoringRun.objects.create(judge=Judge.objects.create(key="signal-r", kind=Judge.Kind.SIGNAL))
    pairwise = StudyFactory()
    for a, b in zip(clip_ids, clip_ids[1:]):
        pair = PairFactory(study=pairwise, condition=ConditionFactory(), clip_a_id=a, clip_b_id=b, clip_key=f"{min(a, b)}-{max(a, b)}")
        Verdict.objects.create(run=run, pair=pair, musicality_score_a=quality[a] * 0.1, musicality_score_b=quality[b] * 0.1)
    section = ratings_section(study=study, rounds=200, seed=0)
    (row,) = section["judges"]
    assert row["clip"]["srcc"] == pytest.approx(1.0) and row["clip"]["n"] == 6
    assert row["clip"]["intervals"]["srcc"][1] == pytest.approx(1.0)
    out = io.StringIO()
    call_command("compare_judges", "--ratings", study.name, stdout=out)
    assert "signal-r run" in out.getvalue() and "SRCC 1.0000" in out.getvalue()
    out = io.StringIO()
    call_command("compare_judges", "--ratings", study.name, "--json", stdout=out)
    assert json.loads(out.getvalue())[0]["system"]["n"] >= 1


def test_imported_mos_figures_carry_clip_resampled_intervals():
    rows = [{"subset": "PAM", "scores_a": {"MI": float(i % 7), "TA": 0.0}, "human": {"musicality_mos": float(i % 7) + (i % 3) * 0.5, "alignment_mos": None}} for i in range(40)]
    block = compare.external_summary(rows)["PAM"]["MI_vs_musicality_mos"]
    low, high = block["intervals"]["srcc"]
    assert low <= block["srcc"] <= high and high <= 1.0
