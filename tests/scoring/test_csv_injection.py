"""Report CSV downloads: text that a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from annotation.models import Condition
from common.csvfile import csv_cell, csv_text
from scoring.models import ScoringRun
from tests.factories import UserFactory
from tests.scoring.report_study import build_study

pytestmark = pytest.mark.django_db

HOSTILE = ["=1+2", "+SUM(1,2)", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("value", HOSTILE)
def test_every_formula_start_is_neutralised(value):
    assert csv_cell(value) == "'" + value
    assert csv_cell("plain text") == "plain text" and csv_cell(-0.5) == -0.5 and csv_cell(None) == ""
    parsed = list(csv.reader(io.StringIO(csv_text([{value: value, "n": -1}]), newline="")))
    assert parsed == [["'" + value, "n"], ["'" + value, "-1"]]


def test_triage_and_judge_breakdown_downloads_neutralise_imported_prompts_and_run_labels(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "csv-injection"}}
    study, pairs, annotators, run1, run2 = build_study(name="csvinj")
    Condition.objects.filter(pk__in=[p.condition_id for p in pairs.values()]).update(prompt="+SUM(1,2)")
    ScoringRun.objects.filter(pk=run1.pk).update(label="=1+2")
    researcher = UserFactory(username="res", roles=["researcher"])
    type(study).objects.filter(pk=study.pk).update(owner=researcher)
    client = Client()
    client.force_login(researcher)

    triage = client.get(f"/api/studies/{study.name}/report/triage.csv")
    assert triage.status_code == 200, triage.content[:300]
    rows = list(csv.DictReader(io.StringIO(triage.content.decode())))
    assert rows and {r["prompt"] for r in rows} == {"'+SUM(1,2)"}
    assert "'=1+2" in {r["source"] for r in rows}

    breakdown = client.get(f"/api/studies/{study.name}/report/judge_breakdown.csv")
    assert breakdown.status_code == 200
    labels = {r["label"] for r in csv.DictReader(io.StringIO(breakdown.content.decode()))}
    assert "'=1+2" in labels and "=1+2" not in labels
    for text in (triage.content.decode(), breakdown.content.decode()):
        for row in csv.reader(io.StringIO(text)):
            assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row), row
