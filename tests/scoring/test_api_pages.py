"""Researcher API and pages for judges and runs, the live progress websocket, and web code staying model-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import TestCase, TransactionTestCase
from django.urls import reverse

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import AnnotatorFactory, StudyFactory, UserFactory

ROOT = Path(__file__).resolve().parents[2]


def _study_with_pairs(name: str, n: int = 2):
    study = StudyFactory(name=name)
    condition, _ = condition_get_or_create(prompt="bright pop")
    t = np.arange(16000) / 16000
    clips = [clip_ingest_array(audio=(0.2 * np.sin(2 * np.pi * (200 + 50 * i) * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for i in range(n + 1)]
    pairs = [pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[i + 1])[0] for i in range(n)]
    return study, pairs


class ScoringApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="res", roles=["researcher"])
        cls.annotator = AnnotatorFactory(username="ann")
        cls.study, cls.pairs = _study_with_pairs("api-study")
        cls.study.owner = cls.researcher  # launching a run on a study is a study write (owner, collaborators, admins)
        cls.study.save(update_fields=["owner"])
        cls.signal = Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
        cls.clap = Judge.objects.create(key="clap-missing", kind=Judge.Kind.CLAP, weights="/nonexistent/clap", queue=Judge.Queue.GPU)

    def test_judges_list_marks_missing_weights_unavailable_with_the_reason(self):
        self.client.force_login(self.researcher)
        data = {j["key"]: j for j in self.client.get("/api/scoring/judges/").json()}
        self.assertTrue(data["signal"]["available"])
        self.assertEqual(data["signal"]["dimensions"], ["musicality"])
        self.assertFalse(data["clap-missing"]["available"])
        self.assertIn("weights not found: /nonexistent/clap", data["clap-missing"]["reason"])

    def test_post_run_for_a_study_scores_it(self):
        self.client.force_login(self.researcher)
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post("/api/scoring/runs/", {"judge": "signal", "study": "api-study"}, content_type="application/json")
        self.assertEqual(response.status_code, 201, response.content)
        run_id = response.json()[0]["id"]
        detail = self.client.get(f"/api/scoring/runs/{run_id}/").json()
        self.assertEqual((detail["state"], detail["done"], detail["remaining"], detail["total"]), ("done", 2, 0, 2))
        verdicts = self.client.get(f"/api/scoring/runs/{run_id}/verdicts/").json()
        self.assertEqual(verdicts["count"], 2)
        self.assertEqual(ScoringRun.objects.get(pk=run_id).created_by, self.researcher)

    def test_bad_requests_change_nothing(self):
        self.client.force_login(self.researcher)
        cases = [
            ({"judge": "nope", "study": "api-study"}, "No judge with key"),
            ({"judge": "signal", "study": "nope"}, "No study named"),
            ({"judge": "signal"}, "exactly one"),
            ({"judge": "signal", "pair_ids": [123456]}, "Unknown pair id"),
            ({"judge": "clap-missing", "study": "api-study"}, "unavailable"),
            ({"judge": "signal", "study": "api-study", "template": "fancy"}, "Unknown template"),
        ]
        for body, message in cases:
            response = self.client.post("/api/scoring/runs/", body, content_type="application/json")
            self.assertIn(response.status_code, (400, 409), body)
            self.assertIn(message, response.json()["detail"])
        self.assertFalse(ScoringRun.objects.exists())

    def test_annotators_and_anonymous_users_are_refused(self):
        self.assertIn(self.client.get("/api/scoring/judges/").status_code, (401, 403))
        self.client.force_login(self.annotator)
        self.assertEqual(self.client.post("/api/scoring/runs/", {"judge": "signal", "study": "api-study"}, content_type="application/json").status_code, 403)
        self.assertEqual(self.client.get(reverse("scoring:run-list")).status_code, 403)
        self.assertFalse(ScoringRun.objects.exists())

    def test_pages_show_availability_runs_and_comparison(self):
        self.client.force_login(self.researcher)
        page = self.client.get(reverse("scoring:judge-list")).content.decode()
        self.assertIn("weights not found: /nonexistent/clap", page)
        self.assertIn("(technical)", page)
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(reverse("scoring:run-list"), {"judge": "signal", "study": "api-study"})
        self.assertEqual(response.status_code, 302)
        run = ScoringRun.objects.get()
        page = self.client.get(response["Location"]).content.decode()
        self.assertIn(f'data-ws-path="/ws/scoring/runs/{run.pk}/"', page)
        self.assertIn("Agreement with human votes", page)
        self.assertIn("technical", page)
        self.assertEqual(page.count('class="status-ok"'), 2)
        bad = self.client.post(reverse("scoring:run-list"), {"judge": "clap-missing", "study": "api-study"})
        self.assertEqual(bad.status_code, 400)
        self.assertEqual(ScoringRun.objects.count(), 1)


class RunProgressSocketTests(TransactionTestCase):
    @pytest.mark.engine
    def test_page_receives_the_state_on_connect_and_pushed_progress(self):
        from auditorium.asgi import application

        researcher = UserFactory(username="res2", roles=["researcher"])
        _, pairs = _study_with_pairs("ws-study", n=1)
        judge = Judge.objects.create(key="signal-ws", kind=Judge.Kind.SIGNAL)
        run = ScoringRun.objects.create(judge=judge, pair_ids=[pairs[0].pk], total=1)

        async def scenario():
            from channels.db import database_sync_to_async
            from django.conf import settings
            from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
            from django.contrib.sessions.backends.db import SessionStore

            @database_sync_to_async
            def session_cookie():
                session = SessionStore()
                session[SESSION_KEY] = str(researcher.pk)
                session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
                session[HASH_SESSION_KEY] = researcher.get_session_auth_hash()
                session.save()
                return session.session_key

            key = await session_cookie()
            headers = [(b"cookie", f"sessionid={key}".encode()), (b"origin", b"http://localhost"), (b"host", b"localhost")]
            communicator = WebsocketCommunicator(application, f"/ws/scoring/runs/{run.pk}/", headers=headers)
            connected, _ = await communicator.connect()
            assert connected
            first = await communicator.receive_json_from(timeout=5)
            assert first["progress"]["remaining"] == 1 and first["progress"]["state"] == "pending"

            @database_sync_to_async
            def score():
                from scoring import services

                services.pair_score(run_id=run.pk, pair_id=pairs[0].pk)

            await score()
            pushed = await communicator.receive_json_from(timeout=5)
            assert pushed["progress"]["done"] == 1 and pushed["progress"]["remaining"] == 0 and pushed["progress"]["state"] == "done"
            await communicator.disconnect()

            anonymous = WebsocketCommunicator(application, f"/ws/scoring/runs/{run.pk}/", headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")])
            connected, code = await anonymous.connect()
            assert not connected and code == 4403
            # Let the refused consumer end inside this loop (its channel-layer receive included)
            # rather than leave it to be cancelled when the loop shuts down.
            await anonymous.disconnect()

        async_to_sync(scenario)()
        self.assertEqual(Verdict.objects.filter(run=run).count(), 1)


@pytest.mark.engine
def test_web_code_never_imports_torch_or_transformers():
    code = (
        "import django, sys; django.setup();"
        "import scoring.views, scoring.api, scoring.admin, scoring.selectors, scoring.services, scoring.consumers, scoring.urls;"
        "from scoring import selectors;"
        "bad = [m for m in ('torch', 'transformers', 'audiobox_aesthetics') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{ROOT / 'platform'}", "DJANGO_SETTINGS_MODULE": "auditorium.test_settings", "HOME": "/tmp"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


class JudgesCommandTests(TestCase):
    def test_lists_defaults_and_unavailable_judges_with_the_reason(self):
        from io import StringIO

        from django.core.management import call_command

        Judge.objects.create(key="aqa-missing", kind=Judge.Kind.AQA, weights="/nowhere/qwen", queue=Judge.Queue.GPU)
        out = StringIO()
        call_command("judges", "--ensure-defaults", stdout=out)
        lines = {line.split()[0]: line for line in out.getvalue().splitlines()}
        self.assertIn("available", lines["signal-technical"])
        self.assertIn("UNAVAILABLE: weights not found: /nowhere/qwen", lines["aqa-missing"])
