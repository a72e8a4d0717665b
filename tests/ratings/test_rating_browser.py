"""The rating page in Chromium: an annotator rates an acr item and a multi-stimulus item, at desktop width and at 390 px.

Submit stays locked until the server has counted every clip heard; the ratings stored are the ones
moved on screen, against the clips the letters stood for.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from annotation.ratings.models import Rating, RatingAssignment, RatingSubmission
from tests.browser import refuse
from tests.factories import ClipFactory
from tests.ratings_helpers import rating_study

pytestmark = pytest.mark.browser
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def shots():
    folder = Path(tempfile.mkdtemp(prefix="ratings-shots-"))
    taken = []

    def take(page, name):
        path = folder / f"ratings-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)

    yield take
    keep = os.environ.get("AUDITORIUM_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for path in taken:
            shutil.copy(path, Path(keep) / path.name)
    shutil.rmtree(folder, ignore_errors=True)


def _login(page, live_server, username):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def _study(task):
    study = rating_study(
        task=task, items=1, clips_per_item=2, reference=(task == "multi"), anchor=(task == "multi"),
        dimensions=("musicality", "alignment"), overlap_target=1, min_listen_seconds=1.0,
        instructions="Rate what you hear.",
    )
    # Three-second clips: long enough for the server to count a second of each.
    for item_clip in study.rating_items.get().item_clips.all():
        clip = ClipFactory(duration=3.0)
        item_clip.clip = clip
        item_clip.save()
    from annotation.models import StudyAnnotator
    from tests.factories import AnnotatorFactory

    user = AnnotatorFactory(username=f"rater-{task}")
    StudyAnnotator.objects.create(study=study, annotator=user, seed=7)
    return study, user


def _overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.parametrize("size", ["desktop", "phone"])
@pytest.mark.parametrize("task", ["acr", "multi"])
def test_annotator_rates_with_submit_locked_until_each_clip_is_heard(live_server, browser, transactional_db, shots, task, size):
    study, user = _study(task)
    context = browser.new_context(viewport=SIZES[size], bypass_csp=True)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server, user.username)
    # The study's ordinary link leads to the rating page.
    page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    page.wait_for_url(f"**/ratings/studies/{study.name}/rate/")
    page.wait_for_selector("#btn-read:visible")
    shots(page, f"{task}-{size}-instruction")
    page.click("#btn-read")
    assignment = RatingAssignment.objects.get(annotator=user)
    labels = list(assignment.labels)
    page.wait_for_function("document.querySelectorAll('.side-btn:not([disabled])').length === %d" % len(labels))

    # Rate everything first: submit still refuses, since nothing was heard.
    values = {}
    for n, label in enumerate(labels):
        for dim in ("musicality", "alignment"):
            if task == "acr":
                value = 4 if dim == "musicality" else 2
                page.check(f"input[data-clip='{label}'][data-dim='{dim}'][value='{value}']", force=True)
            else:
                value = 10 + 20 * n + (5 if dim == "alignment" else 0)
                page.eval_on_selector(
                    f"input[data-clip='{label}'][data-dim='{dim}']",
                    "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input', {bubbles: true})); }",
                    value,
                )
            values[(label, dim)] = value
    assert page.is_disabled("#btn-submit")
    assert "Listen to clip" in page.inner_text("#missing")

    for label in labels:
        page.click(f".rate-clip[data-clip='{label}'] .side-btn")
        # From the top, so each clip has its whole length to be heard before the transport stops.
        page.keyboard.press("Home")
        if page.inner_text("#btn-play").startswith("Play"):
            # The transport stops at the end of a clip; start it again from where it is.
            page.click("#btn-play")
        page.wait_for_function(
            "(label) => /✓/.test(document.querySelector(`.rate-clip[data-clip='${label}'] .heard`).textContent)", arg=label, timeout=15000
        )
    if page.inner_text("#btn-play").startswith("Pause"):
        page.click("#btn-play")
    page.wait_for_function("!document.querySelector('#btn-submit').disabled", timeout=10000)
    assert _overflow(page) <= 1
    shots(page, f"{task}-{size}-ready")
    page.click("#btn-submit")
    page.wait_for_selector("text=No more items for you")
    assert not errors, errors
    submission = RatingSubmission.objects.get(annotator=user)
    stored = {(r.clip_id, r.dimension): r.value for r in Rating.objects.filter(submission=submission)}
    assert stored == {(assignment.labels[label], dim): float(v) for (label, dim), v in values.items()}
    heard = submission.listening_log
    assert all(heard[label]["seconds"] >= 1.0 for label in labels)
    context.close()


@pytest.mark.engine
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("status", "body", "shown"),
    [
        (409, '{"detail": "This item was rated already.", "code": "conflict"}', "This item was rated already."),
        (502, "<html>Bad gateway</html>", "The server answered 502."),
    ],
)
def test_a_refused_request_shows_the_servers_message(live_server, browser, transactional_db, status, body, shown):
    from django.urls import reverse

    study, user = _study("acr")
    context = browser.new_context(viewport=SIZES["desktop"], bypass_csp=True)
    page = context.new_page()
    _login(page, live_server, user.username)
    posted = refuse(page, f"{live_server.url}{reverse('ratings:api-next', kwargs={'name': study.name})}", status=status, body=body)
    page.goto(f"{live_server.url}/ratings/studies/{study.name}/rate/")
    page.wait_for_selector("#error-box:visible")
    assert page.inner_text("#error-box") == shown
    # The request went out with the CSRF header from the shared helper (static/js/http.js).
    assert posted and posted[0].get("x-csrftoken")
    context.close()
