"""The demo's rating studies: one acr and one multi-stimulus study over the demo systems; their MOS order is the systems' known quality."""

import pytest
from django.test import TestCase

from annotation import demo
from annotation.demo.catalogue import DEMO_SYSTEMS
from annotation.models import Study
from annotation.ratings.models import RatingItem, RatingSubmission
from scoring.ratings_report import ratings_section


@pytest.mark.slow
class DemoRatingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        demo.seed_demo()

    def test_one_acr_and_one_multi_study_over_the_six_systems(self):
        acr, multi = Study.objects.get(name="demo-acr"), Study.objects.get(name="demo-multi")
        assert (acr.rating_task.task, multi.rating_task.task) == ("acr", "multi")
        assert RatingItem.objects.filter(study=acr).count() == 48 and RatingItem.objects.filter(study=multi).count() == 8
        item = RatingItem.objects.filter(study=multi).first()
        assert sorted(item.item_clips.values_list("clip__system__name", flat=True)) == sorted(s.name for s in DEMO_SYSTEMS)
        # Seeded, labelled, and room left for the demo annotators.
        assert not RatingSubmission.objects.exclude(source="seeded").exists()
        assert all(i.n_ratings == 3 and i.overlap == 6 for i in RatingItem.objects.filter(study__in=[acr, multi]))
        assert acr.memberships.filter(annotator__username="annotator1", is_active=True).exists()

    def test_mos_order_matches_the_known_quality(self):
        for name in ("demo-acr", "demo-multi"):
            section = ratings_section(study=Study.objects.get(name=name), rounds=100, seed=0, include_seeded=True)
            for dim in ("musicality", "alignment"):
                rows = [r for r in section["mos_systems"] if r["dimension"] == dim]
                order = [r["system"] for r in sorted(rows, key=lambda r: -r["mos"])]
                truth = [s.name for s in sorted(DEMO_SYSTEMS, key=lambda s: getattr(s, f"{dim}_rank"))]
                assert order == truth, (name, dim, rows)
            # Left out unless asked for.
            assert ratings_section(study=Study.objects.get(name=name), rounds=10, seed=0)["ratings"] == 0

    def test_a_forced_reseed_adds_no_rating(self):
        before = RatingSubmission.objects.count()
        demo.seed_demo(force=True)
        assert RatingSubmission.objects.count() == before
