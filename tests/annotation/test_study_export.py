"""The study page's export: options in, an archive built by the worker, progress while it runs, owners only."""

from __future__ import annotations

import io
import json
import zipfile

from django.test import TestCase
from django.urls import reverse

from annotation.dataset import dataset_export_archive
from annotation.dataset.exporter import SEEDED_SOURCE
from annotation.models import Judgment, StudyExport
from annotation.services.exports import export_path
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

JSON = {"HTTP_ACCEPT": "application/json"}


class StudyExportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.owner = UserFactory(username="owner", roles=["researcher"])
        cls.colleague = UserFactory(username="colleague", roles=["researcher"])
        cls.admin = UserFactory(username="root", roles=["admin"])
        cls.annotator = AnnotatorFactory(username="voter")
        cls.study = StudyFactory(name="exp-study", owner=cls.owner)
        cls.voted = [PairFactory(study=cls.study) for _ in range(2)]
        cls.unvoted = PairFactory(study=cls.study)
        for pair in cls.voted:
            JudgmentFactory(pair=pair, annotator=cls.annotator)

    def export(self, user, **data):
        self.client.force_login(user)
        with self.captureOnCommitCallbacks(execute=True):  # the worker's job runs when the request commits
            return self.client.post(reverse("study-export", args=[self.study.name]), data, **JSON)

    def archive(self, status) -> zipfile.ZipFile:
        response = self.client.get(status["download_url"])
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "application/zip")
        self.assertIn("attachment", response["Content-Disposition"])
        return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))

    def test_the_owner_exports_with_options_and_downloads_the_zip(self):
        response = self.export(self.owner, split="keep")
        self.assertEqual(response.status_code, 202)
        status = self.client.get(response.json()["status_url"]).json()
        self.assertEqual(status["state"], "done")
        with self.archive(status) as zf:
            rows = [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
            self.assertIn("README.md", zf.namelist())
        self.assertEqual(len(rows), 2)
        # The option reaches the exporter: the unvoted pair becomes a row of its own.
        status = self.export(self.owner, split="keep", include_unvoted="on").json()
        self.assertEqual(status["summary"], "split as stored, pairs without votes included")
        with self.archive(self.client.get(status["status_url"]).json()) as zf:
            rows = [line for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
        self.assertEqual(len(rows), 3)
        # One archive per person and study: the earlier one and its file are gone.
        self.assertEqual(StudyExport.objects.filter(study=self.study).count(), 1)

    def test_seeded_demo_votes_stay_out_unless_ticked_and_are_labelled_when_in(self):
        JudgmentFactory(pair=self.unvoted, annotator=self.annotator, source=Judgment.Source.SEEDED)
        status = self.export(self.owner, split="keep").json()
        with self.archive(self.client.get(status["status_url"]).json()) as zf:
            rows = [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
        self.assertEqual(len(rows), 2)
        self.assertNotIn(SEEDED_SOURCE, {row["source"] for row in rows})
        status = self.export(self.owner, split="keep", include_seeded="on").json()
        self.assertEqual(status["summary"], "split as stored, seeded demo votes included")
        with self.archive(self.client.get(status["status_url"]).json()) as zf:
            rows = [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
        self.assertEqual(len(rows), 3)
        self.assertEqual(sorted(row["source"] for row in rows).count(SEEDED_SOURCE), 1)

    def test_an_admin_may_export_any_study(self):
        self.assertEqual(self.export(self.admin, split="keep").status_code, 202)

    def test_other_researchers_and_annotators_cannot_export_or_fetch_it(self):
        status = self.export(self.owner, split="keep").json()
        for user in (self.colleague, self.annotator):
            response = self.export(user, split="keep")
            self.assertEqual(response.status_code, 403, user.username)
            self.client.force_login(user)
            self.assertIn(self.client.get(status["status_url"]).status_code, (403, 404))
            self.assertIn(self.client.get(reverse("study-export-download", args=[self.study.name, status["id"]])).status_code, (403, 404))
        self.assertEqual(StudyExport.objects.count(), 1)
        # The colleague does not get the study page at all (the study rule: owner, collaborators, admins).
        self.client.force_login(self.colleague)
        self.assertEqual(self.client.get(reverse("study-manage", args=[self.study.name])).status_code, 403)

    def test_a_balanced_split_without_its_seed_is_refused_and_nothing_is_queued(self):
        response = self.export(self.owner, split="balanced", balanced_test="4")
        self.assertEqual(response.status_code, 400)
        self.assertIn("seed", response.json()["errors"])
        self.assertFalse(StudyExport.objects.exists())
        # The form without the script: the study page comes back with the error beside the field.
        with self.captureOnCommitCallbacks(execute=True):
            page = self.client.post(reverse("study-export", args=[self.study.name]), {"split": "balanced", "balanced_test": "4"})
        self.assertEqual(page.status_code, 400)
        self.assertContains(page, "Give a seed", status_code=400)

    def test_an_impossible_balanced_draw_fails_with_the_exporters_reason(self):
        status = self.export(self.owner, split="balanced", balanced_test="8", seed="3").json()
        status = self.client.get(status["status_url"]).json()
        self.assertEqual(status["state"], "failed")
        self.assertIn("balanced test split of 8", status["message"])
        self.assertIsNone(status["download_url"])

    def test_the_study_page_shows_the_form_and_the_latest_export(self):
        self.client.force_login(self.owner)
        page = self.client.get(reverse("study-manage", args=[self.study.name]))
        self.assertContains(page, 'id="export-form"')
        self.assertContains(page, 'name="include_unvoted"')
        self.assertContains(page, 'name="balanced_test"')
        status = self.export(self.owner, split="keep").json()
        page = self.client.get(reverse("study-manage", args=[self.study.name]))
        self.assertContains(page, reverse("study-export-download", args=[self.study.name, status["id"]]))

    def test_the_archive_reports_progress_while_it_copies_and_zips(self):
        seen = []
        with dataset_export_archive(studies=[self.study], progress=lambda step, done, total: seen.append((step, done, total))):
            pass
        steps = [step for step, _, _ in seen]
        self.assertIn("copying audio", steps)
        self.assertIn("zipping", steps)
        copying = [(done, total) for step, done, total in seen if step == "copying audio"]
        self.assertEqual([done for done, _ in copying], list(range(len(copying))))
        self.assertEqual(copying[-1][1], len(copying))

    def test_a_finished_build_run_again_does_nothing(self):
        from annotation.services.exports import study_export_build

        status = self.export(self.owner, split="keep").json()
        export = StudyExport.objects.get(public_id=status["id"])
        before = export_path(export).stat().st_mtime_ns
        self.assertEqual(study_export_build(export_id=export.pk).state, "done")
        self.assertEqual(export_path(export).stat().st_mtime_ns, before)
