"""What an operator sees: each log line once, a favicon, and one judge of every kind in the demo."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from scoring.models import Judge, ScoringRun
from tests.factories import PairFactory, StudyFactory

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.engine
@pytest.mark.parametrize("fmt", ["json", "plain"])
def test_a_django_log_line_is_printed_once(fmt):
    env = {**os.environ, "DJANGO_DEBUG": "true", "LOG_FORMAT": fmt, "DJANGO_SETTINGS_MODULE": "auditorium.settings"}
    code = "import logging; logging.getLogger('django.request').warning('once-marker')"
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert (out.stdout + out.stderr).count("once-marker") == 1, out.stderr


@pytest.mark.django_db
def test_favicon_is_linked_and_favicon_ico_redirects_to_it(client):
    page = client.get("/accounts/login/").content.decode()
    assert 'rel="icon"' in page and "favicon.svg" in page
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_demo_judges_cover_every_kind_and_score_the_study_once():
    study = StudyFactory(name="demo")
    PairFactory(study=study)
    out = io.StringIO()
    call_command("seed_demo_judges", stdout=out)
    kinds = set(Judge.objects.values_list("kind", flat=True))
    listed = {"signal", "clap", "aesthetics", "muq_mulan", "songeval", "cmi_rm", "llm_pairwise", "aqa", "rubric"}
    assert kinds == listed
    printed = out.getvalue()
    # Missing weights are told once, as information with where they go, not as one error line per judge.
    assert "Judges ready: " in printed and "signal-technical" in printed.split("Judges ready: ")[1].splitlines()[0]
    assert printed.count("Not loaded, as expected on a fresh demo") == 1 and "weights not found" not in printed
    assert f"{settings.AUDITORIUM_MODEL_DIR}/" in printed and "    Qwen2-Audio-7B-Instruct/  for aqascore, qwen2-audio, rubric" in printed
    run = ScoringRun.objects.get(study=study)
    assert run.judge.key == "signal-technical" and run.state == ScoringRun.State.DONE and run.done == 1  # eager in tests
    call_command("seed_demo_judges", stdout=io.StringIO())
    assert ScoringRun.objects.filter(study=study).count() == 1 and Judge.objects.count() == len(listed)
