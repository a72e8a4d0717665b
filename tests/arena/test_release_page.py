"""The release page: a researcher builds the battle log in a worker task, follows it, and downloads the zip;
the public sees it only when ARENA_RELEASE_PUBLIC is on, and never builds."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client

from arena.models import ReleaseBuild
from arena.release_builds import release_build_create, release_build_execute, release_folder
from common.errors import ServiceError
from tests.factories import UserFactory

from .conftest import arena_system, visitor_with_terms
from tests.arena.helpers import voted


@pytest.fixture
def votes(db):
    visitor, _ = visitor_with_terms()
    a, b = arena_system("aurora"), arena_system("borealis")
    return [voted(visitor, a, b, choice) for choice in ("a", "b", "tie")]


def signed_in(username: str, roles: list[str]) -> Client:
    UserFactory(username=username, roles=roles)
    client = Client()
    assert client.login(username=username, password="pw")
    return client


def zip_names(response) -> tuple[zipfile.ZipFile, list[str]]:
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return archive, sorted(archive.namelist())


def test_a_researcher_builds_follows_and_downloads_the_release(votes, django_capture_on_commit_callbacks):
    client = signed_in("res", ["researcher"])
    page = client.get("/arena/release/")
    assert page.status_code == 200 and b"Build release" in page.content and b"No release built yet" in page.content
    with django_capture_on_commit_callbacks(execute=True):  # the queued task runs here (Celery is eager in tests)
        response = client.post("/arena/release/", {"audio": "on", "parquet": "on"})
    assert response.status_code == 302
    build = ReleaseBuild.objects.get()
    assert (build.state, build.battles, build.audio_files, build.stage) == ("done", 3, 6, "done")
    status = client.get("/arena/release/status/").json()["builds"][0]
    assert status["state"] == "done" and status["battles"] == 3 and status["size_bytes"] == build.size_bytes
    page = client.get("/arena/release/").content.decode()
    assert build.file_name in page and f"/arena/release/{build.pk}/download/" in page
    # The build is done by the first page after the request: nothing says it is queued.
    assert "is queued" not in page and 'id="release-active"' not in page
    download = client.get(f"/arena/release/{build.pk}/download/")
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment") and build.file_name in download["Content-Disposition"]
    archive, names = zip_names(download)
    folder = build.file_name[:-4]
    assert {f"{folder}/battles.jsonl", f"{folder}/battles.parquet", f"{folder}/registry.yaml", f"{folder}/README.md"} <= set(names)
    assert len([n for n in names if "/audio/" in n]) == 6
    rows = [json.loads(line) for line in archive.read(f"{folder}/battles.jsonl").decode().splitlines()]
    assert sorted(r["vote"] for r in rows) == ["a", "b", "tie"] and all(f"{folder}/{r['audio_a']}" in names for r in rows)
    # Only the zip stays behind: the working folder and the partial file are gone.
    assert not (release_folder() / f".build-{build.pk}").exists() and not list(release_folder().glob("*.partial"))


def test_rows_only_when_audio_and_parquet_are_left_out(votes):
    user = UserFactory(username="res", roles=["researcher"])
    build = release_build_execute(build_id=ReleaseBuild.objects.create(audio=False, parquet=False, created_by=user).pk)
    names = zipfile.ZipFile(release_folder() / build.file_name).namelist()
    assert build.audio_files == 0 and not any(n.endswith(".parquet") or "/audio/" in n for n in names)


def test_one_build_at_a_time_and_a_rerun_is_a_no_op(votes):
    user = UserFactory(username="res", roles=["researcher"])
    first = release_build_create(user=user)  # a TestCase transaction: not queued until commit, so it stays pending
    with pytest.raises(ServiceError) as refused:
        release_build_create(user=user)
    assert refused.value.code == "build_running" and refused.value.status == 409
    done = release_build_execute(build_id=first.pk)
    stamp = (release_folder() / done.file_name).stat().st_mtime_ns
    again = release_build_execute(build_id=first.pk)
    assert again.state == "done" and (release_folder() / done.file_name).stat().st_mtime_ns == stamp
    assert release_build_create(user=user).pk != first.pk  # the finished build no longer blocks


def test_a_failed_build_says_why_and_leaves_no_file(votes, monkeypatch, settings, tmp_path):
    from arena import release_builds

    settings.MEDIA_ROOT = tmp_path  # a folder of its own, to see that nothing is left in it

    def broken(**kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(release_builds, "release_export", broken)
    user = UserFactory(username="res", roles=["researcher"])
    build = release_build_execute(build_id=ReleaseBuild.objects.create(created_by=user).pk)
    assert build.state == "failed" and "disk full" in build.error and not build.file_name
    assert not release_folder().exists() or not any(release_folder().iterdir())


def test_who_may_see_build_and_download(votes, settings):
    build = release_build_execute(build_id=ReleaseBuild.objects.create(created_by=UserFactory(username="res", roles=["researcher"])).pk)
    failed = ReleaseBuild.objects.create(state="failed", error="boom")
    anonymous, annotator = Client(), signed_in("ann", ["annotator"])
    settings.ARENA_RELEASE_PUBLIC = False
    assert anonymous.get("/arena/release/").status_code == 302  # to sign in
    assert anonymous.get(f"/arena/release/{build.pk}/download/").status_code == 302
    assert annotator.get("/arena/release/").status_code == 403 and annotator.get(f"/arena/release/{build.pk}/download/").status_code == 403
    assert anonymous.get("/arena/release/status/").status_code == 403
    assert b"battle log behind this board" not in anonymous.get("/arena/leaderboard/").content
    settings.ARENA_RELEASE_PUBLIC = True
    page = anonymous.get("/arena/release/")
    assert page.status_code == 200 and b"Build release" not in page.content and build.file_name.encode() in page.content
    assert f'data-build="{failed.pk}"'.encode() not in page.content  # the public sees finished builds only
    assert anonymous.get(f"/arena/release/{build.pk}/download/").status_code == 200
    assert anonymous.get(f"/arena/release/{failed.pk}/download/").status_code == 404
    assert b"battle log behind this board" in anonymous.get("/arena/leaderboard/").content
    # Building stays with researchers, public or not.
    assert annotator.post("/arena/release/", {"audio": "on"}).status_code == 403
    assert Client().post("/arena/release/").status_code == 403
    assert ReleaseBuild.objects.count() == 2


def test_the_queued_note_follows_the_build_state(votes, django_capture_on_commit_callbacks):
    client = signed_in("res", ["researcher"])
    with django_capture_on_commit_callbacks(execute=False):  # queued, no worker has taken it
        assert client.post("/arena/release/", {"audio": "on"}).status_code == 302
    build = ReleaseBuild.objects.get()
    page = client.get("/arena/release/").content.decode()
    assert f"Release #{build.pk} is queued; this page follows its progress." in page
    ReleaseBuild.objects.filter(pk=build.pk).update(state=ReleaseBuild.State.RUNNING)
    page = client.get("/arena/release/").content.decode()
    assert f"Release #{build.pk} is being built" in page and "is queued" not in page
    release_build_execute(build_id=build.pk)
    page = client.get("/arena/release/").content.decode()
    assert "is queued" not in page and "is being built" not in page
