"""Exports say only what is true: seeded demo votes stay out unless asked for (then labelled as demo data), and a vote
counts only if its annotator had consented when it was made."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation.dataset import dataset_export
from annotation.dataset.exporter import SEEDED_SOURCE
from annotation.dataset.keys import EXPORT_SOURCE
from annotation.models import AnnotatorProfile, Judgment
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    study = StudyFactory(name="truthful")
    real = JudgmentFactory(pair=PairFactory(study=study), annotator=AnnotatorFactory(username="consented"))
    seeded = JudgmentFactory(pair=PairFactory(study=study), annotator=AnnotatorFactory(username="demo-voter"), source=Judgment.Source.SEEDED)
    early = JudgmentFactory(pair=PairFactory(study=study), annotator=AnnotatorFactory(username="late-consent"))
    # Consent given only after the vote was stored (or still pending, like the demo's seeded annotators once were).
    AnnotatorProfile.objects.filter(user=early.annotator).update(consented_at=early.created_at + timedelta(hours=1))
    pending = JudgmentFactory(pair=PairFactory(study=study), annotator=AnnotatorFactory(username="pending"))
    AnnotatorProfile.objects.filter(user=pending.annotator).update(consented_at=None)
    imported = JudgmentFactory(pair=PairFactory(study=study), annotator=AnnotatorFactory(username="imported-604"), source=Judgment.Source.IMPORT)
    AnnotatorProfile.objects.filter(user=imported.annotator).update(consented_at=None, is_imported=True)
    researcher = UserFactory(username="exporting-researcher", roles=["researcher"])
    study.owner = researcher  # the export follows the study rule: its owner, collaborators and admins
    study.save(update_fields=["owner"])
    return {"study": study, "real": real, "seeded": seeded, "imported": imported, "researcher": researcher}


def rows_of(archive: bytes) -> tuple[list[dict], str]:
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        rows = [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
        return rows, zf.read("README.md").decode()


def export_api(world, **params) -> tuple[list[dict], str]:
    client = Client()
    client.force_login(world["researcher"])
    response = client.get(f"/api/studies/{world['study'].name}/export/", params)
    assert response.status_code == 200
    return rows_of(b"".join(response.streaming_content))


def test_by_default_the_export_holds_only_consented_real_votes(world):
    rows, readme = export_api(world)
    users = {r["user id"] for r in rows}
    assert users == {"p-consented", "p-imported-604"}
    assert {r["source"] for r in rows if r["user id"] == "p-consented"} == {EXPORT_SOURCE}
    assert "1 votes (seeded demo votes" in readme and "2 votes (annotator had not consented when voting)" in readme
    assert "DEMO DATA" not in readme


def test_asked_for_the_seeded_votes_come_labelled_as_demo_data(world):
    rows, readme = export_api(world, include_seeded="1")
    seeded = [r for r in rows if r["user id"] == "p-demo-voter"]
    assert len(seeded) == 1 and seeded[0]["source"] == SEEDED_SOURCE != EXPORT_SOURCE
    assert "DEMO DATA: 1 rows are seeded demo votes" in readme
    assert not any(r["user id"] in ("p-late-consent", "p-pending") for r in rows)


def test_the_command_and_the_function_take_include_seeded(world, tmp_path):
    report = dataset_export(out_dir=tmp_path / "plain", studies=[world["study"]])
    assert report.rows["train"] + report.rows["test"] == 2
    report = dataset_export(out_dir=tmp_path / "with", studies=[world["study"]], include_seeded=True)
    assert report.rows["train"] + report.rows["test"] == 3
    out = io.StringIO()
    call_command("export_dataset", "--out", str(tmp_path / "cmd"), "--study", "truthful", "--include-seeded", stdout=out)
    lines = sum(len((tmp_path / "cmd" / f"{s}.jsonl").read_text().splitlines()) for s in ("train", "test"))
    assert lines == 3


def test_a_later_vote_of_a_consented_annotator_counts(world):
    JudgmentFactory(pair=PairFactory(study=world["study"]), annotator=world["real"].annotator, created_at=timezone.now())
    rows, _ = export_api(world)
    assert sum(r["user id"] == "p-consented" for r in rows) == 2
