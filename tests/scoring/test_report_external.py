"""Imported judge results in the report: the published TuneJury figures, and rows linked to a study's pairs."""

from __future__ import annotations

import json
import tempfile
from decimal import Decimal
from pathlib import Path

from django.test import TestCase, override_settings

from scoring import report
from scoring.services import external_results_import
from tests.factories import AnnotatorFactory, ClipFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory
from tests.fixtures import TUNEJURY, needs_tunejury


def figure(summary: dict, subset: str, dimension: str, metric: str, score: str = "MI") -> dict:
    return next(f for f in summary["figures"] if (f["subset"], f["dimension"], f["metric"], f["score"]) == (subset, dimension, metric, score))


@needs_tunejury
@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "report-tests-tunejury"}})
class TuneJuryTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.result_set, _ = external_results_import(path=TUNEJURY, name="muqeval-a1", judge_name="MuQ-Eval-A1")
        cls.researcher = UserFactory(username="tj-res", roles=["researcher"])
        cls.study = StudyFactory(name="with-external", owner=cls.researcher)
        PairFactory(study=cls.study)

    def test_published_accuracies_are_reproduced_in_the_report(self):
        data = report.report_build(study=self.study, options=report.ReportOptions(rounds=0), use_cache=False)
        (summary,) = [s for s in data["external"] if s["name"] == "muqeval-a1"]
        self.assertEqual(summary["rows"], 2753)
        cmi = figure(summary, "CMI-Pref", "musicality", "accuracy")
        self.assertEqual((cmi["n"], cmi["value"], cmi["published"]), (500, 0.66, 0.66))
        arena = figure(summary, "Music Arena", "musicality", "accuracy")
        self.assertEqual((arena["n"], arena["value"], arena["published"]), (1340, 0.6761, 0.6761))
        pam = figure(summary, "PAM", "musicality", "srcc")
        self.assertEqual((pam["n"], pam["value"], pam["published"]), (500, 0.4995, 0.4995))
        self.assertEqual(figure(summary, "MusicEval", "musicality", "srcc")["value"], 0.8089)
        # The TA column against musicality MOS is a different published figure; it is not mixed up with MI.
        self.assertEqual(figure(summary, "PAM", "musicality", "srcc", score="TA")["published"], 0.3444)

    def test_page_and_csv_show_them_in_the_machine_vs_human_section(self):
        self.client.force_login(self.researcher)
        page = self.client.get(f"/scoring/studies/{self.study.name}/report/", {"bootstrap": 0})
        self.assertContains(page, "muqeval-a1")
        section = page.content.decode().split('id="judges"', 1)[1].split('id="triage"', 1)[0]
        self.assertIn("0.6600", section)
        self.assertIn("accuracy 0.6600", section)  # the published figure next to it
        self.assertIn("0.6761", section)
        csv_text = self.client.get(f"/api/studies/{self.study.name}/report/external.csv", {"bootstrap": 0}).content.decode()
        self.assertIn("muqeval-a1,MuQ-Eval-A1,CMI-Pref,musicality,accuracy,MI,500,0.66,0.66", csv_text)


class LinkedRowsTests(TestCase):
    """Rows whose audio paths are the import names of a study's clips are scored against that study's humans."""

    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="linked")
        x, y = ClipFactory(original_name="gen/x.mp3"), ClipFactory(original_name="gen/y.mp3")
        u, v = ClipFactory(original_name="gen/u.mp3"), ClipFactory(original_name="gen/v.mp3")
        cls.p1 = PairFactory(study=cls.study, clip_a=x, clip_b=y)
        cls.p2 = PairFactory(study=cls.study, clip_a=u, clip_b=v)
        annotator = AnnotatorFactory(username="linked-ann")
        JudgmentFactory(pair=cls.p1, annotator=annotator, alignment_choice=x, musicality_choice=x, alignment_confidence=Decimal("4.0"))
        JudgmentFactory(pair=cls.p2, annotator=annotator, alignment_choice=v, musicality_choice=v, alignment_confidence=Decimal("4.0"))

    def test_rows_are_oriented_by_clip_name(self):
        rows = [
            # Same order as pair 1: MI prefers x (right), TA prefers y (wrong).
            {"source": "cmi-arena-annotation", "audio_a": "gen/x.mp3", "audio_b": "gen/y.mp3", "scores_a": {"MI": 3.0, "TA": 1.0}, "scores_b": {"MI": 2.0, "TA": 2.0},
             "preference": {"instruction_following": {"preference": "model_a", "confidence": 3.0}, "music_quality": {"preference": "model_a", "confidence": 3.0}}},
            # Stored the other way round from pair 2: audio_a is the pair's clip_b (v); both scores prefer v (right).
            {"source": "cmi-arena-annotation", "audio_a": "gen/v.mp3", "audio_b": "gen/u.mp3", "scores_a": {"MI": 5.0, "TA": 5.0}, "scores_b": {"MI": 1.0, "TA": 1.0},
             "preference": {"instruction_following": {"preference": "model_a", "confidence": 3.0}, "music_quality": {"preference": "model_a", "confidence": 3.0}}},
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "linked.json"
            path.write_text(json.dumps({"rows": rows}))
            result_set, _ = external_results_import(path=path, name="linked-set", judge_name="tiny judge")
        self.assertEqual(result_set.rows.filter(pair__isnull=False).count(), 2)
        data = report.report_build(study=self.study, options=report.ReportOptions(rounds=0), use_cache=False)
        (judge,) = [j for j in data["judges"] if j["source"] == "external"]
        self.assertEqual(judge["label"], "linked-set")
        self.assertEqual((judge["dimensions"]["musicality"]["n"], judge["dimensions"]["musicality"]["accuracy"]), (2, 1.0))
        self.assertEqual((judge["dimensions"]["alignment"]["n"], judge["dimensions"]["alignment"]["accuracy"]), (2, 0.5))
        # Its own published-label figures are listed too.
        (summary,) = [s for s in data["external"] if s["name"] == "linked-set"]
        self.assertEqual(figure(summary, "CMI-Pref", "musicality", "accuracy")["value"], 1.0)
        self.assertEqual(figure(summary, "CMI-Pref", "alignment", "accuracy", score="TA")["value"], 0.5)
