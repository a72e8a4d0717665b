"""Import limits through the admin upload: every text field has a length limit, a zip an entry count; errors name the line."""

from __future__ import annotations

import io
import zipfile

import pytest

from annotation.dataset import keys
from annotation.models import Clip, Pair, Study

from tests.annotation.admin_upload import audio_zip, jsonl, row, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="importer", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize("field", ["prompt", "lyrics", "feedback", "model_a", "model_b", "prompt id", "user id", "source", "modality", "split"])
def test_an_over_long_text_field_is_refused_by_line_and_nothing_is_imported(admin_client, tmp_path, field):
    limit = keys.TEXT_LIMITS[field]
    rows = jsonl(row(), row(user="605", **{field: "x" * (limit + 1)}))
    response = upload(admin_client, archive=audio_zip(tmp_path), rows=rows)
    page = response.content.decode()
    assert response.status_code == 400 and "Nothing was imported" in page
    assert f"rows.jsonl line 2: {field} is {limit + 1:,} characters long; the limit is {limit:,}" in page
    assert Study.objects.count() == Pair.objects.count() == Clip.objects.count() == 0


def test_a_ten_megabyte_prompt_is_refused_by_its_line_length_unparsed(admin_client, tmp_path):
    rows = jsonl(row(prompt="la " * 3_500_000), row())
    page = upload(admin_client, archive=audio_zip(tmp_path), rows=rows).content.decode()
    assert "rows.jsonl line 1: the line is longer than 1,048,576 bytes" in page
    assert "line 2" not in page  # the next line is read as its own row
    assert Pair.objects.count() == 0


def test_a_long_prompt_under_the_line_cap_is_refused_by_its_field_limit(admin_client, tmp_path):
    rows = jsonl(row(prompt="la " * 100_000))
    page = upload(admin_client, archive=audio_zip(tmp_path), rows=rows).content.decode()
    assert "rows.jsonl line 1: prompt is 300,000 characters long; the limit is 5,000" in page


@pytest.mark.parametrize("field", ["audio-path", "audio2"])
def test_an_over_long_path_is_refused(admin_client, tmp_path, field):
    page = upload(admin_client, archive=audio_zip(tmp_path), rows=jsonl(row(**{field: "gen/" + "a" * 600 + ".wav"}))).content.decode()
    assert f"rows.jsonl line 1: {field} is 608 characters long; the limit is 500" in page


def test_a_zip_with_too_many_entries_is_refused_before_extraction(admin_client, tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.dataset.upload.MAX_ZIP_ENTRIES", 50)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(51):
            zf.writestr(f"gen/{i}.txt", b"")
    page = upload(admin_client, archive=buf.getvalue(), rows=jsonl(row())).content.decode()
    assert "The archive holds 51 entries; the limit is 50." in page
    assert Clip.objects.count() == 0


def test_rows_at_the_limits_import(admin_client, tmp_path):
    rows = jsonl(row(prompt="p" * keys.TEXT_LIMITS["prompt"], feedback="f" * keys.TEXT_LIMITS["feedback"]))
    response = upload(admin_client, archive=audio_zip(tmp_path), rows=rows)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Pair.objects.count() == 1
