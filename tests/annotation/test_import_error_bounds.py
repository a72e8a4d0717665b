"""A file of millions of bad lines gets the first errors and a count, under real uvicorn, in bounded time, memory and page size."""

from __future__ import annotations

import resource
import time

import pytest
import requests
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation.dataset.rows import MAX_REPORTED_ERRORS
from annotation.models import Pair
from tests.annotation.admin_upload import audio_zip
from tests.factories import StudyFactory, UserFactory
from tests.live_uvicorn import serving

TOKEN = "t" * 32  # an unmasked CSRF secret: the cookie and the field carry the same value
BAD_LINES = 2_000_000


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_two_million_bad_lines_report_the_first_hundred_and_a_count(tmp_path):
    owner = UserFactory(username="bulk-owner", roles=["researcher"])
    study = StudyFactory(name="bulk", owner=owner)
    browser = Client()
    browser.force_login(owner)
    cookies = {settings.SESSION_COOKIE_NAME: browser.cookies[settings.SESSION_COOKIE_NAME].value, "csrftoken": TOKEN}
    rows = b"x\n" * BAD_LINES  # 4 MB, every line malformed JSON
    archive = audio_zip(tmp_path)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with serving() as (port, _):
        started = time.monotonic()
        response = requests.post(
            f"http://127.0.0.1:{port}{reverse('pairs-import')}",
            data={"csrfmiddlewaretoken": TOKEN, "study": study.name},
            files={"archive": ("audio.zip", archive, "application/zip"), "jsonl": ("rows.jsonl", rows, "application/json")},
            cookies=cookies, allow_redirects=False, timeout=300,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert response.status_code == 400
    page = response.text
    assert f"<strong>{BAD_LINES}</strong> invalid rows" in page and f"the first {MAX_REPORTED_ERRORS} are listed" in page
    assert page.count("malformed JSON") == MAX_REPORTED_ERRORS
    assert len(response.content) < 200_000, f"the error page is {len(response.content)} bytes"
    assert elapsed < 90, f"{elapsed:.1f} s"
    assert grown_mib < 600, f"peak memory grew by {grown_mib:.0f} MiB"
    assert not Pair.objects.filter(study=study).exists()
    print(f"2,000,000 bad lines: {elapsed:.1f} s, peak memory +{grown_mib:.0f} MiB, page {len(response.content)} bytes")
