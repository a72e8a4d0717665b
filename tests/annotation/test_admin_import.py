"""Admin: upload a JSONL and a zip of audio (safely extracted), errors per line; export a study as a zip."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.urls import reverse

from annotation.models import Clip, Judgment, Pair, Study
from annotation.services import condition_get_or_create
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_changelist_links_to_the_import_page(admin_client):
    page = admin_client.get(reverse("admin:annotation_study_changelist")).content.decode()
    assert reverse(IMPORT_URL) in page and "Import pairs" in page
    form = admin_client.get(reverse(IMPORT_URL)).content.decode()
    assert 'enctype="multipart/form-data"' in form and 'name="archive"' in form


def test_upload_imports_rows_and_audio(admin_client, tmp_path):
    response = upload(admin_client, archive=audio_zip(tmp_path), rows=jsonl(row(), row(user="605")))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Judgment.objects.filter(pair__study__name="uploaded", source=Judgment.Source.IMPORT).count() == 2
    assert set(Clip.objects.values_list("original_name", flat=True)) == {"gen/a.wav", "gen/b.wav"}
    follow = admin_client.get(response["Location"]).content.decode()
    assert "Imported." in follow and "2 judgments" in follow


def test_row_errors_are_shown_by_line_and_nothing_is_imported(admin_client, tmp_path):
    rows = jsonl(row(), row(b="gen/missing.wav", user="7"), row(user="8", **{"preference-musicality": "maybe"}))
    response = upload(admin_client, archive=audio_zip(tmp_path), rows=rows)
    page = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was imported" in page
    assert "rows.jsonl line 2: audio2 &#x27;gen/missing.wav&#x27;: audio file not found" in page
    assert "rows.jsonl line 3: preference-musicality has unknown label &#x27;maybe&#x27;" in page
    assert Study.objects.count() == Pair.objects.count() == Clip.objects.count() == 0


def test_skip_invalid_from_the_page_imports_the_valid_rows(admin_client, tmp_path):
    rows = jsonl(row(), row(b="gen/missing.wav", user="7"))
    page = upload(admin_client, archive=audio_zip(tmp_path), rows=rows, skip_invalid=True).content.decode()
    assert "Imported with errors" in page and "rows.jsonl line 2" in page
    assert Judgment.objects.count() == 1


def _link(name: str, target: str):
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target


@pytest.mark.parametrize(
    "entry, message",
    [
        (("../escape.wav", b"RIFF"), "points outside the archive"),
        (("gen/../../escape.wav", b"RIFF"), "points outside the archive"),
        (("/tmp/escape.wav", b"RIFF"), "has an absolute path"),
        (("C:/escape.wav", b"RIFF"), "has an absolute path"),
        (_link("gen/link.wav", "/etc/passwd"), "is a symbolic link"),
    ],
)
def test_unsafe_archive_entries_are_refused_before_anything_is_written(admin_client, tmp_path, entry, message):
    before = set(os.listdir(tmp_path.parent))
    response = upload(admin_client, archive=audio_zip(tmp_path, extra=[entry]), rows=jsonl(row()))
    page = response.content.decode()
    assert response.status_code == 400 and message in page
    assert not Path("/tmp/escape.wav").exists() and not (tmp_path.parent / "escape.wav").exists()
    assert set(os.listdir(tmp_path.parent)) == before
    assert Clip.objects.count() == 0 and Study.objects.count() == 0


def test_archives_over_the_size_limit_are_refused(admin_client, tmp_path, settings):
    archive = audio_zip(tmp_path)
    settings.AUDITORIUM_MAX_UPLOAD_BYTES = len(archive) - 1
    page = upload(admin_client, archive=archive, rows=jsonl(row())).content.decode()
    assert f"the limit is {len(archive) - 1:,} bytes" in page
    # A small zip that expands past the limit (a zip bomb) is refused too.
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("gen/zeros.wav", b"\0" * 200_000)
    settings.AUDITORIUM_MAX_UPLOAD_BYTES = 100_000
    assert len(bomb.getvalue()) < 100_000
    page = upload(admin_client, archive=bomb.getvalue(), rows=jsonl(row())).content.decode()
    assert "The archive expands to more than the limit of 100,000 bytes." in page
    assert Clip.objects.count() == 0


def test_a_file_that_is_not_a_zip_is_refused(admin_client):
    page = upload(admin_client, archive=b"just text", rows=jsonl(row())).content.decode()
    assert "The audio archive is not a valid zip file." in page


def test_staff_without_import_rights_get_403(client, tmp_path):
    staff = UserFactory(is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_study"))
    client.force_login(staff)
    assert client.get(reverse(IMPORT_URL)).status_code == 403
    assert upload(client, archive=audio_zip(tmp_path), rows=jsonl(row())).status_code == 403
    assert Clip.objects.count() == 0


def test_export_action_downloads_a_zip_that_reimports_from_the_page(admin_client, tmp_path):
    study = StudyFactory(name="source")
    condition, _ = condition_get_or_create(prompt="lo-fi beat")
    pair = PairFactory(study=study, condition=condition)
    JudgmentFactory(pair=pair, annotator=AnnotatorFactory(), rationale="steady groove")
    response = admin_client.post(
        reverse("admin:annotation_study_changelist"), {"action": "export_dataset", "_selected_action": [study.pk]}
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="source-dataset.zip"' in response["Content-Disposition"]
    archive = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        names = zf.namelist()
        rows = [json.loads(line) for line in zf.read("train.jsonl").decode().splitlines()]
    assert {"train.jsonl", "test.jsonl", "README.md"} <= set(names)
    assert rows[0]["feedback"] == "steady groove" and rows[0]["audio-path"] in names

    # The zip alone (no separate JSONL) imports into another study: its top-level JSONL files are used.
    response = upload(admin_client, archive=archive, rows=None, study="copy")
    assert response.status_code == 302, response.content.decode()[:2000]
    copied = Pair.objects.get(study__name="copy")
    assert copied.condition == pair.condition and copied.judgments.get().rationale == "steady groove"


from tests.annotation.admin_upload import IMPORT_URL, audio_zip, jsonl, row, upload
from tests.browser import launch  # noqa: E402


@pytest.mark.engine
@pytest.mark.browser
def test_admin_uploads_in_a_real_browser_and_sees_errors_by_line(live_server, transactional_db, tmp_path):
    """Set AUDITORIUM_SCREENSHOT_DIR to keep the screenshots."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    UserFactory(username="boss", is_staff=True, is_superuser=True)
    (tmp_path / "audio.zip").write_bytes(audio_zip(tmp_path))
    (tmp_path / "bad.jsonl").write_bytes(jsonl(row(), row(b="gen/missing.wav", user="7")))
    (tmp_path / "good.jsonl").write_bytes(jsonl(row(), row(user="605")))
    shots = Path(os.environ.get("AUDITORIUM_SCREENSHOT_DIR") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{live_server.url}/admin/login/?next=/admin/annotation/study/")
        page.fill("#id_username", "boss")
        page.fill("#id_password", "pw")
        page.click("input[type=submit]")
        page.click("text=Import pairs")
        page.fill("#id_study", "browser-study")
        page.set_input_files("#id_jsonl", str(tmp_path / "bad.jsonl"))
        page.set_input_files("#id_archive", str(tmp_path / "audio.zip"))
        page.click("text=Check and import")
        errors = page.locator("#row-errors li")
        assert errors.count() == 1
        assert errors.first.inner_text().startswith("bad.jsonl line 2: audio2 'gen/missing.wav': audio file not found")
        page.screenshot(path=str(shots / "admin-import-errors.png"), full_page=True)
        stored = Judgment.objects.count()
        # Playwright's sync block runs in a greenlet, which gets its own database connection: close it,
        # or PostgreSQL refuses to drop the test database at the end.
        connection.close()
        assert stored == 0

        page.set_input_files("#id_jsonl", str(tmp_path / "good.jsonl"))
        page.set_input_files("#id_archive", str(tmp_path / "audio.zip"))
        page.click("text=Check and import")
        page.wait_for_url("**/admin/annotation/study/")
        assert "Imported." in page.locator(".messagelist").inner_text()
        assert page.locator("#result_list th a", has_text="browser-study").count() == 1
        page.screenshot(path=str(shots / "admin-import-done.png"), full_page=True)
        browser.close()
    assert Judgment.objects.filter(pair__study__name="browser-study").count() == 2
