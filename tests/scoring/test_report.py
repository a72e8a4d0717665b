"""Machine-vs-human figures, the report API, page, command and live refresh, on a hand-checked study."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from unittest import mock

import krippendorff
import numpy as np
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.management import CommandError, call_command
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import AnnotatorProfile, Study
from scoring import broadcast, evaluation, report, report_tables
from scoring.routing import websocket_urlpatterns
from tests.factories import AnnotatorFactory, AssignmentFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory
from tests.listening import listen
from tests.scoring.report_study import HUMANS, MODALITY_OF, R1_ALIGNMENT, build_study

NAN = np.nan


def own_cache(name: str):
    """A private in-process cache per test class: reports are cached, and a shared Redis must not see test data."""
    return override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": f"report-tests-{name}"}})


@own_cache("figures")
class ReportFiguresTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study, cls.pairs, cls.annotators, cls.run1, cls.run2 = build_study()

    def setUp(self):
        self.report = report.report_build(study=self.study, options=report.ReportOptions(rounds=200, triage=3), use_cache=False)
        self.judges = {j["label"]: j for j in self.report["judges"]}

    def test_accuracy_against_the_majority_with_ties_dropped(self):
        block = self.judges["rubric v1"]["dimensions"]["alignment"]
        # Scored pairs 1, 2, 4, 5, 6, 7, 8 (3 is a tie): right on 1, 4, 6, 7.
        self.assertEqual((block["n"], block["correct"], block["ties_dropped"]), (7, 4, 1))
        self.assertAlmostEqual(block["accuracy"], 4 / 7, places=4)
        self.assertAlmostEqual(self.judges["rubric v1"]["dimensions"]["musicality"]["accuracy"], 5 / 7, places=4)
        self.assertAlmostEqual(self.judges["rubric v1"]["headline"], (4 / 7 + 5 / 7) / 2, places=4)
        low, high = block["ci"]
        self.assertLessEqual(low, 4 / 7)
        self.assertGreaterEqual(high, 4 / 7)

    def test_breakdowns_follow_the_benchmark(self):
        block = self.judges["rubric v1"]["dimensions"]["alignment"]
        by_modality = {m: (v["n"], v["accuracy"]) for m, v in block["by_modality"].items()}
        self.assertEqual(by_modality, {"text": (2, 0.5), "text+lyrics": (1, 1.0), "text+ref": (2, 0.5), "text+lyrics+ref": (2, 0.5)})
        self.assertEqual(block["wo_audio"], 0.75)  # unweighted mean of text 0.5 and text+lyrics 1.0
        self.assertEqual(block["w_audio"], 0.5)
        self.assertEqual((block["reference"]["with"]["n"], block["reference"]["with"]["accuracy"]), (4, 0.5))
        self.assertAlmostEqual(block["reference"]["without"]["accuracy"], 2 / 3, places=4)
        self.assertEqual(block["type"]["instrumental"]["accuracy"], 0.5)
        self.assertAlmostEqual(block["type"]["vocal"]["accuracy"], 2 / 3, places=4)
        buckets = {b: (v["n"], v["accuracy"]) for b, v in block["by_confidence"].items()}
        self.assertEqual(buckets["<3"], (2, 0.5))  # pairs 2 (wrong) and 7 (right)
        self.assertEqual(buckets["=3"], (2, 0.5))  # pairs 4 (right) and 5 (wrong)
        self.assertEqual(buckets[">3"][0], 3)
        self.assertAlmostEqual(buckets[">3"][1], 2 / 3, places=4)

    def test_scores_predict_with_ties_going_to_b_and_discards_are_counted(self):
        judge = self.judges["signal v1"]
        self.assertEqual((judge["verdicts"], judge["ok"], judge["discarded"], judge["failed"]), (8, 6, 1, 1))
        self.assertEqual(judge["discard_rate"], 0.125)
        block = judge["dimensions"]["alignment"]
        # Scored: 1 a (right), 2 tie -> b (right), 6 b (right), 7 b (wrong), 8 a (right); 3 is a human tie.
        self.assertEqual((block["n"], block["correct"]), (5, 4))
        self.assertIsNone(judge["dimensions"]["musicality"]["accuracy"])
        self.assertIsNone(judge["headline"])

    def test_alpha_with_the_judge_as_one_more_rater(self):
        block = self.judges["rubric v1"]["dimensions"]["alignment"]
        # Rows: up to three humans then the judge; columns pairs 1..8; 1 = the pair's clip_a.
        matrix = np.array(
            [
                [1, 0, 1, 0, 1, 0, 1, 1],
                [1, NAN, 0, 0, NAN, NAN, NAN, 1],
                [NAN, NAN, NAN, 1, NAN, NAN, NAN, 0],
                [1, 1, 1, 0, 0, 0, 1, 0],
            ]
        )
        self.assertAlmostEqual(block["alpha_with_judge"], krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), places=4)
        self.assertAlmostEqual(block["alpha_humans_same_pairs"], krippendorff.alpha(reliability_data=matrix[:3], level_of_measurement="nominal"), places=4)

    def test_vectorised_accuracy_agrees_with_the_plain_row_evaluation(self):
        """The report's frames; scoring.evaluation's majority view over the raw votes; its vote view over one hand-made majority row per pair."""
        votes, majorities = [], []
        for i, pair_votes in HUMANS.items():
            pred = "model_a" if R1_ALIGNMENT[i] == "a" else "model_b"
            for pick, conf in pair_votes:
                votes.append({"pair_id": i, "pred_alignment": pred, "label_alignment": pick, "confidence_alignment": conf, "modality": MODALITY_OF[i]})
            a_votes = sum(1 for pick, _ in pair_votes if pick == "a")
            label = "model_a" if 2 * a_votes > len(pair_votes) else ("model_b" if 2 * a_votes < len(pair_votes) else None)
            winners = [float(c) for pick, c in pair_votes if (pick == "a") == (label == "model_a")]
            majorities.append({"pred_alignment": pred, "label_alignment": label, "confidence_alignment": sum(winners) / len(winners) if label else None, "modality": MODALITY_OF[i]})
        by_majority = evaluation.evaluate(votes, view=evaluation.MAJORITY, dimensions=("alignment",))["alignment"]
        by_hand = evaluation.evaluate(majorities, view=evaluation.VOTE, dimensions=("alignment",))["alignment"]
        self.assertEqual(by_majority["coverage"], {"answered": 7, "labelled": 7, "share": 1.0, "ties": 1})
        block = self.judges["rubric v1"]["dimensions"]["alignment"]
        for expected in (by_majority, by_hand):
            self.assertAlmostEqual(block["accuracy"], expected["all"]["accuracy"], places=4)
            self.assertEqual(block["n"], expected["all"]["n"])
            for modality in evaluation.MODALITIES:
                self.assertEqual(block["by_modality"][modality]["n"], expected["by_modality"][modality]["n"])
            self.assertAlmostEqual(block["wo_audio"], expected["w/o audio"], places=4)
            self.assertAlmostEqual(block["w_audio"], expected["w/ audio"], places=4)
            for bucket in evaluation.BUCKETS:
                self.assertEqual(block["by_confidence"][bucket]["n"], expected["by_confidence"]["all"][bucket]["n"])
                self.assertAlmostEqual(block["by_confidence"][bucket]["accuracy"], expected["by_confidence"]["all"][bucket]["accuracy"], places=4)

    def test_triage_lists_the_most_confident_disagreements_with_audio_and_rationales(self):
        rubric = [t for t in self.report["triage"] if t["source"] == "rubric v1"]
        self.assertEqual(len(rubric), 3)
        first = rubric[0]
        # Pair 8: majority confidence 4.5 is the highest among the rubric judge's misses.
        self.assertEqual((first["pair_id"], first["human_prefers"], first["judge_prefers"]), (self.pairs[8].pk, "clip_a", "clip_b"))
        self.assertEqual((first["human_votes"], first["human_majority_votes"], first["human_confidence"]), (3, 2, 4.5))
        self.assertEqual(first["clip_a"]["url"], f"/audio/{self.pairs[8].clip_a.public_id}/")
        self.assertIsNotNone(first["reference"])
        self.assertIn("vote 0 on pair 8: clip a is tighter", [h["rationale"] for h in first["humans"]])
        self.assertEqual(first["judge_rationale"], "judge says b")
        self.assertEqual([t["pair_id"] for t in rubric[1:]], [self.pairs[8].pk, self.pairs[5].pk])

    def test_tables_flatten_every_section(self):
        tables = report_tables.report_tables(self.report)
        self.assertEqual(set(tables), set(report_tables.TABLES))
        judges = [r for r in tables["judges"] if r["label"] == "rubric v1" and r["dimension"] == "alignment"]
        self.assertEqual(judges[0]["accuracy"], round(4 / 7, 4))
        self.assertEqual(len(tables["confidence_histogram"]), 18)
        self.assertEqual({r["pseudonym"] for r in tables["annotators"]}, {"p-h0", "p-h1", "p-h2"})
        text = report_tables.table_csv(tables["judge_breakdown"])
        parsed = list(csv.DictReader(io.StringIO(text)))
        row = next(r for r in parsed if r["label"] == "rubric v1" and r["dimension"] == "alignment" and r["group"] == "modality" and r["level"] == "text+lyrics")
        self.assertEqual((row["n"], row["accuracy"]), ("1", "1.0"))

    def test_report_is_cached_until_the_data_changes(self):
        options = report.ReportOptions(rounds=50)
        first = report.report_build(study=self.study, options=options)
        self.assertEqual(report.report_build(study=self.study, options=options)["generated_at"], first["generated_at"])
        JudgmentFactory(pair=self.pairs[2], annotator=self.annotators[1])
        fresh = report.report_build(study=self.study, options=options)
        self.assertNotEqual(fresh["generated_at"], first["generated_at"])
        self.assertEqual(fresh["study"]["votes"], first["study"]["votes"] + 1)


@own_cache("access")
class ReportAccessTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study, cls.pairs, cls.annotators, cls.run1, cls.run2 = build_study()
        cls.researcher = UserFactory(username="resa", roles=["researcher"])
        # Exclusions are study writes: the researcher owns the study (the study rule).
        Study.objects.filter(pk=cls.study.pk).update(owner=cls.researcher)

    def test_api_json_for_researchers_only(self):
        url = reverse("api-study-report", kwargs={"name": self.study.name})
        self.assertEqual(url, f"/api/studies/{self.study.name}/report/")
        self.assertIn(self.client.get(url).status_code, (401, 403))
        self.client.force_login(self.annotators[0])
        self.assertEqual(self.client.get(url).status_code, 403)
        self.client.force_login(self.researcher)
        response = self.client.get(url, {"bootstrap": 100})
        self.assertEqual(response.status_code, 200)
        data = response.json()
        self.assertEqual(data["study"]["votes"], 14)
        self.assertEqual(data["options"]["bootstrap"], 100)
        self.assertEqual({j["label"] for j in data["judges"]}, {"rubric v1", "signal v1"})
        bad = self.client.get(url, {"bootstrap": "-1"})
        self.assertEqual(bad.status_code, 400)
        self.assertIn("bootstrap=-1 is out of range", bad.json()["detail"])
        self.assertEqual(self.client.get(reverse("api-study-report", kwargs={"name": "no-such-study"})).status_code, 404)

    def test_api_csv_tables(self):
        self.client.force_login(self.researcher)
        url = reverse("api-study-report-table", kwargs={"name": self.study.name, "table": "judges"})
        self.assertEqual(url, f"/api/studies/{self.study.name}/report/judges.csv")
        response = self.client.get(url)
        self.assertEqual(response.status_code, 200)
        self.assertTrue(response["Content-Type"].startswith("text/csv"))
        self.assertIn('filename="judged-judges.csv"', response["Content-Disposition"])
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        self.assertEqual(len(rows), 4)
        rubric = next(r for r in rows if r["label"] == "rubric v1" and r["dimension"] == "alignment")
        self.assertEqual(rubric["accuracy"], str(round(4 / 7, 4)))
        missing = self.client.get(reverse("api-study-report-table", kwargs={"name": self.study.name, "table": "nope"}))
        self.assertEqual(missing.status_code, 404)
        self.assertIn("choose one of: agreement", missing.json()["detail"])
        self.client.force_login(self.annotators[1])
        self.assertEqual(self.client.get(url).status_code, 403)

    def test_api_exclusion(self):
        url = reverse("api-annotator-exclusion", kwargs={"name": self.study.name, "pseudonym": "p-h2"})
        self.client.force_login(self.annotators[0])
        self.assertEqual(self.client.post(url, {"action": "exclude", "reason": "x"}, content_type="application/json").status_code, 403)
        self.client.force_login(self.researcher)
        missing = self.client.post(url, {"action": "exclude"}, content_type="application/json")
        self.assertEqual(missing.status_code, 400)
        self.assertIn("Say why", missing.json()["detail"])
        self.assertEqual(self.client.post(url, {"action": "remove"}, content_type="application/json").status_code, 400)
        done = self.client.post(url, {"action": "exclude", "reason": "always picks B"}, content_type="application/json")
        self.assertEqual(done.status_code, 200)
        self.assertTrue(done.json()["excluded"])
        self.assertIn("excluded by resa: always picks B", done.json()["log"][0])
        votes = self.client.get(reverse("api-study-report", kwargs={"name": self.study.name}), {"bootstrap": 0}).json()["study"]
        self.assertEqual((votes["votes"], votes["excluded_votes"], votes["excluded_annotators"]), (12, 2, 1))
        again = self.client.post(url, {"action": "include"}, content_type="application/json")
        self.assertFalse(again.json()["excluded"])

    def test_page_for_researchers(self):
        url = reverse("scoring:study-report", kwargs={"name": self.study.name})
        self.assertEqual(url, f"/scoring/studies/{self.study.name}/report/")
        self.assertEqual(self.client.get(url).status_code, 302)
        self.client.force_login(self.annotators[0])
        forbidden = self.client.get(url)
        self.assertEqual(forbidden.status_code, 403)
        self.assertContains(forbidden, "This page is for researchers", status_code=403)
        self.client.force_login(self.researcher)
        response = self.client.get(url, {"bootstrap": 50})
        self.assertEqual(response.status_code, 200)
        for text in ("Do the annotators agree?", "Position bias", "rubric v1", "57.1%", "Where judges and humans disagree", f"/audio/{self.pairs[8].clip_a.public_id}/", "judges.csv"):
            self.assertContains(response, text)
        self.assertContains(response, 'id="report-data"')
        body = self.client.get(url, HTTP_X_REPORT_REFRESH="1")
        self.assertNotContains(body, "<html")
        self.assertContains(body, "Do the annotators agree?")
        bad = self.client.get(url, {"gold_min": "lots"})
        self.assertContains(bad, "gold_min=&#x27;lots&#x27; is not a number", status_code=400)

    def test_page_exclusion_form(self):
        self.client.force_login(self.researcher)
        url = reverse("scoring:study-report-exclusion", kwargs={"name": self.study.name, "pseudonym": "p-h1"})
        response = self.client.post(url, {"action": "exclude", "reason": "fast clicking", "query": "bootstrap=10"})
        self.assertEqual(response.status_code, 302)
        self.assertEqual(response["Location"], f"/scoring/studies/{self.study.name}/report/?bootstrap=10#annotators")
        profile = AnnotatorProfile.objects.get(pseudonym="p-h1")
        self.assertIsNotNone(profile.excluded_at)
        page = self.client.get(f"/scoring/studies/{self.study.name}/report/?bootstrap=10")
        self.assertContains(page, "is now left out of analysis")
        self.assertContains(page, "Include again")
        self.client.post(url, {"action": "exclude", "reason": "twice"})
        self.assertContains(self.client.get(f"/scoring/studies/{self.study.name}/report/?bootstrap=0"), "already excluded")

    def test_command_json_table_summary_and_exclusion(self):
        out = io.StringIO()
        call_command("report", "--study", self.study.name, "--json", "--bootstrap", "100", stdout=out)
        data = json.loads(out.getvalue())
        self.assertEqual(data["study"]["votes"], 14)
        self.client.force_login(self.researcher)
        api = self.client.get(reverse("api-study-report", kwargs={"name": self.study.name}), {"bootstrap": 100}).json()
        for key in ("agreement", "annotators", "judges", "triage"):
            self.assertEqual(data[key], api[key])
        out = io.StringIO()
        call_command("report", "--study", self.study.name, "--table", "agreement", "--bootstrap", "0", stdout=out)
        self.assertEqual([r["dimension"] for r in csv.DictReader(io.StringIO(out.getvalue()))], ["alignment", "musicality"])
        out = io.StringIO()
        call_command("report", "--study", self.study.name, "--bootstrap", "0", stdout=out)
        self.assertIn("judge rubric v1: alignment 57.1% (n=7)", out.getvalue())
        with self.assertRaisesMessage(CommandError, "No study named 'nope'"):
            call_command("report", "--study", "nope")
        with self.assertRaisesMessage(CommandError, "--by USERNAME is required"):
            call_command("report", "--study", self.study.name, "--exclude", "p-h0", "--reason", "x")
        call_command("report", "--study", self.study.name, "--exclude", "p-h0", "--reason", "spam", "--by", "resa", "--bootstrap", "0", stdout=io.StringIO(), stderr=io.StringIO())
        self.assertIsNotNone(AnnotatorProfile.objects.get(pseudonym="p-h0").excluded_at)
        with self.assertRaisesMessage(CommandError, "min_votes=0 is out of range"):
            call_command("report", "--study", self.study.name, "--min-votes", "0")


# database_sync_to_async closes "old" connections around each call; inside a TestCase
# transaction that would close the test's own connection, so it is a no-op here.
@mock.patch("channels.db.close_old_connections", lambda: None)
class LiveRefreshTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="live-study", min_listen_seconds=2.0)
        cls.pair = PairFactory(study=cls.study)
        cls.researcher = UserFactory(username="live-res", roles=["researcher"])
        cls.study.owner = cls.researcher  # exclusions are study writes
        cls.study.save(update_fields=["owner"])
        cls.annotator = AnnotatorFactory(username="live-ann")

    @pytest.mark.engine
    def test_listener_is_installed(self):
        self.assertIn(broadcast.report_judgment_listener, annotation_services.judgment_listeners)

    @pytest.mark.engine
    def test_a_committed_judgment_reaches_open_report_pages(self):
        assignment = AssignmentFactory(annotator=self.annotator, pair=self.pair, served_at=timezone.now() - timedelta(minutes=2))
        listen(assignment, seconds=3.0)

        def submit():
            with self.captureOnCommitCallbacks(execute=True):
                annotation_services.judgment_submit(
                    assignment_id=assignment.pk,
                    annotator=self.annotator,
                    alignment="A",
                    alignment_confidence="3",
                    musicality="B",
                    musicality_confidence="4",
                    listening_log={"A": {"plays": 1, "seconds": 5}, "B": {"plays": 1, "seconds": 5}, "switches": 1},
                    idempotency_key="live-1",
                )

        async def scenario():
            communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/scoring/studies/{self.study.name}/report/")
            communicator.scope["user"] = self.researcher
            connected, _ = await communicator.connect()
            self.assertTrue(connected)
            await database_sync_to_async(submit)()
            message = await communicator.receive_json_from(timeout=5)
            await communicator.disconnect()
            return message

        message = async_to_sync(scenario)()
        self.assertEqual((message["type"], message["reason"]), ("changed", "judgment"))

    # Refusal needs no channel layer. With Redis, a refused consumer left running was cancelled at
    # event-loop shutdown and once never finished, hanging the suite; the in-memory layer keeps
    # this test about refusal codes.
    @pytest.mark.engine
    @override_settings(CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}})
    def test_annotators_and_unknown_studies_are_refused(self):
        async def scenario(user, name):
            communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/scoring/studies/{name}/report/")
            communicator.scope["user"] = user
            answer = await communicator.connect()
            await communicator.disconnect()
            return answer

        self.assertEqual(async_to_sync(scenario)(self.annotator, self.study.name), (False, 4403))
        self.assertEqual(async_to_sync(scenario)(self.researcher, "nope"), (False, 4404))


def test_report_pushes_are_debounced_per_study_and_never_dropped():
    from django.core.cache import cache

    from scoring.tasks import report_changed_task

    cache.clear()
    with mock.patch.object(report_changed_task, "apply_async") as queued, mock.patch.object(broadcast, "report_changed_broadcast") as sent:
        for _ in range(5):
            broadcast.report_changed_queue(study_id=7, reason="judgment")
        broadcast.report_changed_queue(study_id=8, reason="judgment")
        # One push per study for the whole burst, at the end of the window.
        assert [c.kwargs for c in queued.call_args_list] == [
            {"args": [7, "judgment"], "countdown": broadcast.REPORT_PUSH_WINDOW_SECONDS},
            {"args": [8, "judgment"], "countdown": broadcast.REPORT_PUSH_WINDOW_SECONDS},
        ]
        broadcast.report_changed_push(study_id=7, reason="judgment")
        sent.assert_called_once_with(study_id=7, reason="judgment")
        # A change after the push started is not swallowed: it queues the next one.
        broadcast.report_changed_queue(study_id=7, reason="judgment")
        assert queued.call_count == 3

    with mock.patch.object(report_changed_task, "apply_async", side_effect=ConnectionError("broker down")):
        broadcast.report_changed_queue(study_id=9, reason="judgment")  # the committed vote is not failed
    assert cache.get("scoring:report-push:9") is None  # and the next change tries again


@pytest.mark.django_db
def test_report_of_an_empty_study_is_well_formed():
    study = StudyFactory(name="empty-study")
    PairFactory(study=study)
    data = report.report_build(study=study, options=report.ReportOptions(rounds=20), use_cache=False)
    assert data["study"]["votes"] == 0
    assert data["agreement"]["alignment"]["agreement_rate"] is None
    assert data["agreement"]["alignment"]["alpha"] is None
    assert data["annotators"] == [] and data["judges"] == [] and data["triage"] == []
    json.dumps(data)  # JSON-safe: no NaN, numpy types or dates
    assert all(isinstance(rows, list) for rows in report_tables.report_tables(data).values())
