"""The researcher's own import page: owners (and admins) upload JSONL + zip into a study picked from a list."""

from __future__ import annotations

import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Judgment, Pair, Study
from tests.annotation.admin_upload import audio_zip, jsonl, row
from tests.factories import AnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db
URL = reverse("pairs-import")


def post(client, *, archive: bytes, rows: bytes | None, study: str, skip_invalid=False):
    data = {"study": study, "archive": SimpleUploadedFile("audio.zip", archive, content_type="application/zip")}
    if rows is not None:
        data["jsonl"] = SimpleUploadedFile("rows.jsonl", rows, content_type="application/json")
    if skip_invalid:
        data["skip_invalid"] = "on"
    return client.post(URL, data)


@pytest.fixture
def owner(client):
    user = UserFactory(username="owner", roles=["researcher"])
    client.force_login(user)
    return user


@pytest.fixture
def study(owner):
    return StudyFactory(name="mine", owner=owner)


def test_owner_imports_and_lands_on_the_result_page(client, study, tmp_path):
    response = post(client, archive=audio_zip(tmp_path), rows=jsonl(row(), row(user="605")), study=study.name)
    assert response.status_code == 302 and response["Location"] == reverse("pairs-import-done")
    assert Judgment.objects.filter(pair__study=study).count() == 2
    page = client.get(response["Location"]).content.decode()
    assert "Pairs imported into “mine”" in page and "2 judgments" in page
    assert reverse("study-manage", args=["mine"]) in page and reverse("scoring:study-report", args=["mine"]) in page


def test_study_is_chosen_from_the_owners_studies_only(client, study, owner):
    StudyFactory(name="someone-elses")
    StudyFactory(name="also-mine", owner=owner)
    page = client.get(URL + "?study=mine").content.decode()
    assert '<select name="study"' in page
    assert '<option value="mine" selected>' in page and '<option value="also-mine">' in page
    assert "someone-elses" not in page


def test_a_typo_creates_no_study(client, study, tmp_path):
    response = post(client, archive=audio_zip(tmp_path), rows=jsonl(row()), study="mnie")
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not Study.objects.filter(name="mnie").exists() and not Pair.objects.exists()


def test_researcher_who_does_not_own_the_study_gets_403(client, owner, tmp_path):
    other = StudyFactory(name="theirs", owner=UserFactory(username="them", roles=["researcher"]))
    assert client.get(URL + f"?study={other.name}").status_code == 403
    response = post(client, archive=audio_zip(tmp_path), rows=jsonl(row()), study=other.name)
    assert response.status_code == 403
    assert not Pair.objects.exists()


def test_annotator_gets_403(client, tmp_path):
    study = StudyFactory(name="any")
    client.force_login(AnnotatorFactory())
    assert client.get(URL).status_code == 403
    assert post(client, archive=audio_zip(tmp_path), rows=jsonl(row()), study=study.name).status_code == 403
    assert not Pair.objects.exists()


def test_admin_may_import_into_any_study(client, tmp_path):
    StudyFactory(name="theirs", owner=UserFactory(username="them", roles=["researcher"]))
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    response = post(client, archive=audio_zip(tmp_path), rows=jsonl(row()), study="theirs")
    assert response.status_code == 302
    assert Pair.objects.filter(study__name="theirs").count() == 1


def test_one_bad_row_imports_nothing_and_names_the_line(client, study, tmp_path):
    response = post(client, archive=audio_zip(tmp_path), rows=jsonl(row(), row(a="gen/missing.wav")), study=study.name)
    assert response.status_code == 400
    page = response.content.decode()
    assert "rows.jsonl line 2" in page and "Nothing was imported" in page
    assert not Pair.objects.exists()


def test_corrupt_wav_error_names_the_zip_entry_and_no_server_path(client, study, tmp_path):
    info = zipfile.ZipInfo("gen/broken.wav")
    archive = audio_zip(tmp_path, extra=[(info, b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is not audio")])
    response = post(client, archive=archive, rows=jsonl(row(b="gen/broken.wav")), study=study.name)
    assert response.status_code == 400
    page = response.content.decode()
    assert "rows.jsonl line 1" in page and "gen/broken.wav" in page
    assert "auditorium-import-" not in page and "/tmp" not in page and str(tmp_path) not in page
    assert not Pair.objects.exists()


def test_bad_zip_is_refused_with_a_message(client, study):
    response = post(client, archive=b"not a zip at all", rows=jsonl(row()), study=study.name)
    assert response.status_code == 400
    assert "not a valid zip file" in response.content.decode()


def test_page_without_owned_studies_points_to_creating_one(client, owner):
    page = client.get(URL).content.decode()
    assert 'id="no-studies"' in page and reverse("study-create") in page


def test_creating_a_study_makes_the_researcher_its_owner(client, owner):
    client.post(reverse("study-create"), {"name": "fresh", "overlap_target": 3, "overlap_share": 0.3, "min_listen_seconds": 10,
                                          "rationale_min_length": 0, "lock_ttl_seconds": 1800, "gold_rate": 0, "annotator_target": 0,
                                          "selection": "random", "active_share": 0.5, "licence": "CC BY 4.0", "is_active": "on"})
    assert Study.objects.get(name="fresh").owner == owner
    assert (reverse("pairs-import") + "?study=fresh") in client.get(reverse("study-manage", args=["fresh"])).content.decode()


def test_upload_progress_script_is_on_the_page(client, study):
    page = client.get(URL + "?study=mine").content.decode()
    assert "annotation/import.js" in page and 'id="upload-bar"' in page
