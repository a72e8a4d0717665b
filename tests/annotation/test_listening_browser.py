"""The listening page in a real browser: Playwright drives Debian Chromium against the live server.

Screenshots are taken at each step; set AUDITORIUM_SCREENSHOT_DIR (e.g. docs/screenshots) to keep them.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from decimal import Decimal
from pathlib import Path

import pytest

from annotation import services
from annotation.models import Assignment, Judgment
from annotation.selectors import pair_audio_path
from tests.annotation.browser_helpers import listening_study, login  # noqa: F401  (the fixture is used by name)
from tests.browser import refuse
from tests.factories import AnnotatorFactory, PairFactory, UserFactory

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture
def page(browser):
    # Playwright's wait_for_function runs its predicate through eval, which the pages' CSP forbids (as it should);
    # tests/reliability/test_csp_browser.py loads these pages without the bypass and checks nothing is refused.
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    yield context.new_page()
    context.close()


@pytest.fixture
def shots():
    """Write screenshots to a temporary folder; copy them out when asked to."""
    folder = Path(tempfile.mkdtemp(prefix="auditorium-shots-"))
    taken: list[Path] = []

    def take(page, name: str, full_page: bool = False) -> Path:
        path = folder / f"annotation-{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        assert path.stat().st_size > 1000
        taken.append(path)
        return path

    yield take
    keep = os.environ.get("AUDITORIUM_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for path in taken:
            shutil.copy(path, Path(keep) / path.name)
    shutil.rmtree(folder, ignore_errors=True)


def seed_showing_b_first(pair_id: int) -> int:
    # The engine picks the side from the membership seed; a seed that shows clip_b as A
    # makes a side mix-up visible in the assertions below.
    for seed in range(1, 10_000):
        if random.Random(f"{seed}:side:{pair_id}").random() >= 0.5:
            return seed
    raise AssertionError("no seed found")


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_annotator_judges_a_pair_with_the_keyboard(live_server, page, listening_study, shots):
    study, pair = listening_study
    user = UserFactory(username="listener", roles=["annotator"])
    membership = services.study_annotator_add(study=study, user=user)
    membership.seed = seed_showing_b_first(pair.pk)
    membership.save(update_fields=["seed"])
    researcher = UserFactory(username="lead", roles=["researcher"])
    study.collaborators.add(researcher)  # the study rule: owner, collaborators, admins

    console_errors: list[str] = []
    page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    calls = cycle_requests(page)
    login(page, live_server, "listener")

    # No consent yet: the study shows, but the way in is the consent page.
    assert page.locator("text=Consent needed").is_visible()
    shots(page, "home")
    page.click("text=Read and give consent")
    page.wait_for_selector("#consent-title")
    assert "CC BY-NC-SA 4.0" in page.content()
    shots(page, "consent")
    page.check("#id_agree")
    page.click("text=Give consent")
    page.wait_for_url(f"{live_server.url}/")
    page.click("text=Start")

    # Step 1: the instruction, with the clips still locked.
    page.wait_for_selector("#btn-read", state="visible")
    assert page.locator("#cond-prompt").inner_text().startswith("An upbeat synth-pop song")
    assert "Neon on the water" in page.locator("#cond-lyrics").inner_text()
    assert page.locator("#cond-ref").get_attribute("src").startswith("/listen/")
    assert page.locator("#btn-play").is_disabled()
    text = page.locator("#listen-app").inner_text()
    for hidden in (pair.clip_a.system.name, pair.clip_b.system.name, pair.clip_a.sha256[:12]):
        assert hidden not in text and hidden not in page.content()
    shots(page, "instruction")
    page.keyboard.press("Enter")  # "I have read the instruction"
    page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)

    # Step 2: real playback, switching A -> B with the keyboard.
    page.locator("body").focus()
    page.keyboard.press("Space")
    hear(page, "A")
    page.keyboard.press("s")
    hear(page, "B")
    page.wait_for_selector("#heard-B[data-done=true]")
    page.locator("#step-listen").scroll_into_view_if_needed()
    shots(page, "listening")
    if "Pause" in page.locator("#btn-play").inner_text():
        page.keyboard.press("Space")
    assert page.locator("#btn-submit").is_disabled()  # listened, but nothing answered yet

    # Step 3: every answer by keyboard. Q = A for instruction following, Shift+3 = 3.5;
    # R = B for musicality, 4 = 4.0; T drops the playhead time into the rationale.
    page.keyboard.press("q")
    page.keyboard.press("Shift+Digit3")
    page.keyboard.press("r")
    page.keyboard.press("Digit4")
    page.keyboard.press("t")
    page.keyboard.type("A keeps the steady beat; B sounds cleaner.")
    page.keyboard.press("Escape")
    page.wait_for_selector("#btn-submit:not([disabled])")
    shots(page, "answered")
    # The Play button is called what it shows ("Play", the key hint and the glyph are not read out).
    play = page.get_by_role("button", name="Play", exact=True)
    if play.count() == 0:
        play = page.get_by_role("button", name="Pause", exact=True)
    assert play.count() == 1 and play.inner_text().split()[1] in ("Play", "Pause")
    page.set_viewport_size({"width": 800, "height": 1280})  # a tablet held upright
    page.evaluate("window.scrollTo(0, 0)")
    shots(page, "tablet")
    page.set_viewport_size(VIEWPORT)
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # an impatient second press must not store a second judgment
    # Straight on to the next pair (the default), with a visible confirmation; this study has no more.
    page.wait_for_selector("#stage-empty", state="visible")
    assert "judgment is saved" in page.locator("#flash").inner_text()
    shots(page, "done")

    judgments = list(Judgment.objects.filter(annotator=user))
    assert len(judgments) == 1
    judgment = judgments[0]
    assignment = Assignment.objects.get(annotator=user, pair=pair)
    assert assignment.state == Assignment.State.SUBMITTED
    assert assignment.a_clip_id == pair.clip_b_id  # the seed put clip_b on screen as A
    assert judgment.a_clip_id == assignment.a_clip_id
    assert judgment.alignment_choice_id == assignment.a_clip_id == pair.clip_b_id
    assert judgment.musicality_choice_id == pair.clip_a_id
    assert judgment.alignment_confidence == Decimal("3.5")
    assert judgment.musicality_confidence == Decimal("4.0")
    assert judgment.rationale[:4] in ("[A 0", "[B 0")
    assert judgment.rationale.endswith("A keeps the steady beat; B sounds cleaner.")
    log = judgment.listening_log
    for side in ("A", "B"):
        assert log[side]["plays"] >= 1
        assert 1.0 <= log[side]["seconds"] <= 3.0
    assert log["switches"] >= 1
    elapsed = (judgment.created_at - assignment.served_at).total_seconds()
    assert log["A"]["seconds"] + log["B"]["seconds"] <= elapsed + 0.5
    assert judgment.time_on_page_ms and judgment.time_on_page_ms >= 2000
    # The page forgets a pair once it is stored.
    assert page.evaluate(f"localStorage.getItem('auditorium:assignment:{assignment.pk}')") is None

    # Only one pair in the study: the page says so, with the same count the home page shows.
    empty = page.locator("#stage-empty").inner_text()
    assert "All done" in empty and "1 of 1" in empty, empty
    assert "1 of 1 pairs judged" in page.locator("#progress-text").inner_text()
    shots(page, "empty")
    assert not failed, failed
    assert not console_errors, console_errors
    # The whole cycle was four requests: the next pair, both clips, and the judgment that carried the listening.
    assignment_url = f"/api/studies/{study.name}/assignments/{assignment.pk}/judgment/"
    clips = [pair_audio_path(assignment_id=assignment.pk, label=side) for side in "AB"]  # the assignment's own URLs
    sent = calls(exclude=[pair_audio_path(assignment_id=assignment.pk, label="ref")])
    assert len(sent) == 4, sent
    assert sent[0] == ("POST", f"/api/studies/{study.name}/next/") and sent[3] == ("POST", assignment_url), sent
    assert sorted(sent[1:3]) == sorted(("GET", clip) for clip in clips), sent  # the two clips load side by side

    # The researcher's view of the same study.
    page.context.clear_cookies()
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/manage/studies/{study.name}/")
    page.wait_for_selector("#h-annotators")
    assert "1 / 1" in page.locator("table.data").first.inner_text()
    shots(page, "manage", full_page=True)


@pytest.mark.engine
@pytest.mark.timeout(90)
def test_forged_or_too_fast_listening_is_refused_and_double_submit_stores_one(live_server, page, listening_study):
    study, pair = listening_study
    user = AnnotatorFactory(username="forger")
    services.study_annotator_add(study=study, user=user)

    login(page, live_server, "forger")
    page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    page.wait_for_selector("#btn-read", state="visible")
    assignment = Assignment.objects.get(annotator=user, pair=pair)

    post = """async ([url, body]) => {
        const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
        const r = await fetch(url, {method: "POST", credentials: "same-origin",
            headers: {"Content-Type": "application/json", "X-CSRFToken": token}, body: JSON.stringify(body)});
        return {status: r.status, data: await r.json()};
    }"""
    both = """async ([url, body]) => {
        const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
        const send = () => fetch(url, {method: "POST", credentials: "same-origin",
            headers: {"Content-Type": "application/json", "X-CSRFToken": token}, body: JSON.stringify(body)})
            .then(async (r) => ({status: r.status, data: await r.json()}));
        return Promise.all([send(), send()]);
    }"""
    url = f"/api/assignments/{assignment.pk}/judgment/"
    answer = {
        "alignment": "A",
        "alignment_confidence": 3,
        "musicality": "B",
        "musicality_confidence": 2.5,
        "rationale": "B is muddy in the low end at 0:01.",
        "time_on_page_ms": 4000,
    }

    # The page has fetched both clips but played nothing: a log claiming two minutes is refused...
    page.wait_for_function("window.auditoriumListening.snapshot().ready")
    forged = page.evaluate(
        post,
        [url, {**answer, "idempotency_key": "forged-1", "listening_log": {"A": {"plays": 3, "seconds": 60}, "B": {"plays": 3, "seconds": 60}, "switches": 4}}],
    )
    assert forged["status"] == 400 and forged["data"]["code"] == "listening_too_short", forged
    assert forged["data"]["heard"] == {"A": 0.0, "B": 0.0}
    # ...and so are play events a script posts faster than the clock: a burst earns half a second at most.
    events_url = f"/api/assignments/{assignment.pk}/listening/"
    burst = [{"seq": 100 + k, "side": side, "kind": kind} for k, (kind, side) in enumerate([("play", "A")] + [("tick", "A")] * 5 + [("switch", "B")] + [("tick", "B")] * 5)]
    sent = page.evaluate(post, [events_url, {"events": burst}])
    assert sent["status"] == 200 and sent["data"]["heard"]["A"] <= 0.5 and sent["data"]["heard"]["B"] < 0.1, sent
    short = page.evaluate(post, [url, {**answer, "idempotency_key": "short-1", "listening_log": {"A": {"plays": 1, "seconds": 1.2}, "B": {"plays": 1, "seconds": 1.2}, "switches": 1}}])
    assert short["status"] == 400 and short["data"]["code"] == "listening_too_short", short
    assert "clip B (" in short["data"]["detail"]
    assert not Judgment.objects.filter(annotator=user).exists()

    # Real listening on the page; the page's event numbers carry on past the script's.
    page.keyboard.press("Enter")
    page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
    page.locator("body").focus()
    page.keyboard.press("Space")
    hear(page, "A", 1.3)
    page.keyboard.press("s")
    hear(page, "B", 1.3)
    if snapshot(page)["playing"]:
        page.keyboard.press("Space")
    # The page posted none of it: its events and both receipts wait for the judgment, which carries them.
    wait_until(page, "s.pending > 0 && s.receipts === 2")
    batch = page.evaluate("window.auditoriumListening.batch()")
    # Numbered from 1, under the script's 100-111: the server has those numbers, so it ignores these and says where its numbers end.
    cycle_url = f"/api/studies/{study.name}/assignments/{assignment.pk}/judgment/"
    stale = page.evaluate(post, [cycle_url, {**answer, "idempotency_key": "stale-1", "listening": batch}])
    assert stale["status"] == 400 and stale["data"]["code"] == "listening_too_short" and stale["data"]["next_seq"] == 112, stale
    # Numbered after them, as the page renumbers its events when told.
    for k, event in enumerate(batch["events"]):
        event["seq"] = 112 + k

    # The same idempotency key sent twice at once (a double click): exactly one judgment is stored.
    good = {**answer, "idempotency_key": "double-1", "listening_log": {"A": {"plays": 1, "seconds": 1.3}, "B": {"plays": 1, "seconds": 1.3}, "switches": 1}, "listening": batch}
    url = cycle_url
    first, second = page.evaluate(both, [url, good])
    assert [first["status"], second["status"]].count(201) == 1, (first, second)
    stored = first if first["status"] == 201 else second
    other = second if stored is first else first
    # The loser of the race either replays the stored answer or is told the pair is already judged;
    # the page treats both as "saved". The study has no more pairs: the answer says so.
    assert other["status"] == 200 and other["data"] == stored["data"] or other["data"]["code"] == "already_submitted", (first, second)
    assert stored["data"]["next"]["assignment"] is None and stored["data"]["next"]["state"] == "finished", stored
    assert Judgment.objects.filter(annotator=user).count() == 1
    # A retry with the same key (a lost response) gets the same answer back.
    retry = page.evaluate(post, [url, good])
    assert retry["status"] == 200 and retry["data"] == stored["data"], retry
    # A fresh key for the same pair is refused: the first answer stays.
    again = page.evaluate(post, [url, {**good, "idempotency_key": "double-2"}])
    assert again["status"] == 409 and again["data"]["code"] == "already_submitted"
    assert Judgment.objects.filter(annotator=user).count() == 1


def cycle_requests(page):
    """Record the page's API and audio requests; calling the result gives [(method, path)] in the order sent,
    leaving out the paths in `exclude` (the condition's reference, which its own audio element loads)."""
    from urllib.parse import urlsplit

    seen: list[tuple[str, str]] = []

    def note(request):
        path = urlsplit(request.url).path
        if path.startswith(("/api/", "/audio/", "/listen/")):
            seen.append((request.method, path))

    page.on("request", note)
    return lambda exclude=(): [call for call in seen if call[1] not in exclude]


def open_unlocked(page, live_server, study, username: str) -> None:
    login(page, live_server, username)
    page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    page.wait_for_selector("#btn-read", state="visible")
    page.keyboard.press("Enter")
    page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
    page.locator("body").focus()


def hear(page, side: str, seconds: float = 1.0) -> None:
    """Keep clip `side` playing (keyboard only) until it has been heard for `seconds`.

    On a busy machine a clip can end before the wait notices; then play it again.
    """
    for _ in range(150):
        state = snapshot(page)
        if state["log"][side]["seconds"] >= seconds:
            return
        if state["active"] != side:
            page.keyboard.press(side.lower())
        elif not state["playing"]:
            page.keyboard.press("Space")
        page.wait_for_timeout(100)
    raise AssertionError(f"clip {side} was not heard for {seconds} s: {snapshot(page)}")


def snapshot(page) -> dict:
    return page.evaluate("window.auditoriumListening.snapshot()")


def wait_until(page, condition: str, timeout: int = 10_000) -> None:
    page.wait_for_function(f"(() => {{ const s = window.auditoriumListening.snapshot(); return {condition}; }})()", timeout=timeout)


@pytest.mark.engine
@pytest.mark.timeout(90)
def test_transport_switches_in_place_loops_and_seeks(live_server, page, listening_study):
    study, _pair = listening_study
    user = AnnotatorFactory(username="transport")
    services.study_annotator_add(study=study, user=user)
    open_unlocked(page, live_server, study, "transport")

    page.keyboard.press("Space")
    wait_until(page, "s.playing && s.position > 0.4")
    before = snapshot(page)
    page.keyboard.press("s")
    after = snapshot(page)
    assert before["active"] == "A" and after["active"] == "B" and after["playing"]
    # Switching keeps the shared position: no restart, no gap (webMUSHRA-style synchronous switch).
    drift = (after["position"] - before["position"]) - (after["audioTime"] - before["audioTime"])
    assert abs(drift) < 0.010, drift
    assert after["log"]["switches"] == 1 and after["log"]["B"]["plays"] == 1

    # L at the playhead, L again a little later: a loop region of at least 0.5 s that repeats.
    page.keyboard.press("l")
    page.wait_for_timeout(300)
    page.keyboard.press("l")
    looped = snapshot(page)
    assert looped["loop"] is not None
    start, end = looped["loop"]["start"], looped["loop"]["end"]
    assert end - start >= 0.5 - 1e-9 and end <= 2.5
    wait_until(page, "s.log.B.loops >= 1", timeout=5_000)
    inside = snapshot(page)
    assert start - 0.01 <= inside["position"] <= end + 0.01
    page.keyboard.press("l")
    assert snapshot(page)["loop"] is None

    # Clicking the middle of A's waveform selects A and seeks there.
    box = page.locator("#wave-A").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    sought = snapshot(page)
    assert sought["active"] == "A" and sought["log"]["A"]["seeks"] == 1
    assert abs(sought["position"] - 1.25) < 0.15, sought
    page.keyboard.press("Space")
    paused = snapshot(page)
    assert not paused["playing"]
    page.wait_for_timeout(200)
    assert snapshot(page)["position"] == paused["position"]

    # A loop set twice at the same spot still lasts the minimum 0.5 s.
    page.keyboard.press("l")
    page.keyboard.press("l")
    tiny = snapshot(page)["loop"]
    assert abs((tiny["end"] - tiny["start"]) - 0.5) < 1e-6


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_reload_resumes_the_same_pair_with_answers_then_skip(live_server, page, listening_study):
    study, pair = listening_study
    second = PairFactory(study=study)
    user = AnnotatorFactory(username="resumer")
    services.study_annotator_add(study=study, user=user)
    open_unlocked(page, live_server, study, "resumer")

    page.keyboard.press("Space")
    hear(page, "A")
    page.keyboard.press("s")
    hear(page, "B")
    if snapshot(page)["playing"]:
        page.keyboard.press("Space")
    page.keyboard.press("w")
    page.keyboard.press("Digit2")
    page.keyboard.press("e")
    page.keyboard.press("Shift+Digit4")
    page.locator("#rationale").fill("Half-way rationale before a reload.")
    page.locator("#rationale").press("Escape")
    first_id = snapshot(page)["assignment"]
    heard_before = snapshot(page)["log"]
    page.wait_for_timeout(1200)  # the page saves its state at least once a second

    page.reload()
    page.wait_for_selector("#read-done", state="visible")
    wait_until(page, "s.ready")
    assert snapshot(page)["assignment"] == first_id
    assert Assignment.objects.filter(annotator=user).count() == 1
    assert page.locator("input[name=alignment][value=B]").is_checked()
    assert page.locator("input[name=alignment_confidence][value='2.0']").is_checked()
    assert page.locator("input[name=musicality][value=A]").is_checked()
    assert page.locator("input[name=musicality_confidence][value='4.5']").is_checked()
    assert page.locator("#rationale").input_value() == "Half-way rationale before a reload."
    restored = snapshot(page)["log"]
    assert restored["A"]["seconds"] >= heard_before["A"]["seconds"] - 0.2
    assert restored["switches"] == heard_before["switches"]
    try:
        page.wait_for_selector("#btn-submit:not([disabled])")
    except Exception as exc:
        raise AssertionError(f"submit stays disabled after the reload: {page.inner_text('#listen-app')[:1500]!r} {snapshot(page)}") from exc
    # With "next pair right after submitting" switched off, a saved screen comes in between.
    page.uncheck("#auto-next")
    page.locator("body").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#stage-saved", state="visible")
    judgment = Judgment.objects.get(annotator=user)
    assignment = Assignment.objects.get(pk=first_id)
    assert judgment.pair_id == assignment.pair_id
    assert judgment.alignment_choice_id == assignment.b_clip_id
    assert judgment.musicality_choice_id == assignment.a_clip_id
    assert judgment.musicality_confidence == Decimal("4.5")

    # The next pair, skipped with a reason: it is recorded and the study runs out cleanly.
    page.keyboard.press("Enter")
    page.wait_for_selector("#btn-read", state="visible")
    page.click("#btn-skip")
    page.check("input[name=skip_preset][value='Audio does not play or is broken.']")
    page.click("#btn-skip-confirm")
    page.wait_for_selector("#stage-empty", state="visible")
    assert "Pair skipped (Audio does not play or is broken)" in page.locator("#flash").inner_text()
    assert page.locator("#flash").is_visible()
    other = second if assignment.pair_id == pair.pk else pair
    skipped = Assignment.objects.get(annotator=user, pair=other)
    assert skipped.state == Assignment.State.SKIPPED
    assert skipped.skip_reason == "Audio does not play or is broken."


@pytest.mark.engine
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("status", "body", "shown"),
    [
        (503, '{"detail": "The study is paused while its owner edits it.", "code": "paused"}', "The study is paused while its owner edits it."),
        (502, "<html>Bad gateway</html>", "The next pair could not be loaded (HTTP 502)."),
    ],
)
def test_a_refused_next_pair_shows_the_servers_message(live_server, page, listening_study, status, body, shown):
    from django.urls import reverse

    study, _pair = listening_study
    user = AnnotatorFactory(username="refused")
    services.study_annotator_add(study=study, user=user)
    login(page, live_server, "refused")
    next_url = f"{live_server.url}{reverse('api-assignment-next', kwargs={'name': study.name})}"
    posted = refuse(page, next_url, status=status, body=body)
    page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    page.wait_for_selector("#error-box:visible")
    assert page.inner_text("#error-box") == shown
    # The request went out with the CSRF header from the shared helper (static/js/http.js).
    assert posted and posted[0].get("x-csrftoken")


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_on_a_phone_each_pair_after_the_first_needs_no_next_request(live_server, browser, listening_study):
    """390 px, two pairs judged back to back: next, both clips and the judgment for the first; the judgment's answer
    brings the second, so it costs its two clips and its judgment only."""
    study, pair = listening_study
    # A second pair of the same two clips under another condition: real audio, no second decode to wait for.
    second = PairFactory(study=study, clip_a=pair.clip_b, clip_b=pair.clip_a)
    user = AnnotatorFactory(username="phone-cycle")
    services.study_annotator_add(study=study, user=user)
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, bypass_csp=True)
    page = context.new_page()
    try:
        calls = cycle_requests(page)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        open_unlocked(page, live_server, study, "phone-cycle")
        for turn in range(2):
            if turn:
                page.wait_for_selector("#btn-read", state="visible")
                page.keyboard.press("Enter")
                page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
                page.locator("body").focus()
            page.keyboard.press("Space")
            hear(page, "A")
            page.keyboard.press("s")
            hear(page, "B")
            if snapshot(page)["playing"]:
                page.keyboard.press("Space")
            for key in ("q", "Digit3", "r", "Digit4"):
                page.keyboard.press(key)
            page.locator("#rationale").fill(f"Pair {turn + 1}: A is steadier.")
            page.locator("#rationale").press("Escape")
            page.wait_for_selector("#btn-submit:not([disabled])")
            page.locator("body").focus()
            page.keyboard.press("Enter")
            page.wait_for_function(f"document.getElementById('progress-text').textContent.startsWith('{turn + 1} of')")
        page.wait_for_selector("#stage-empty", state="visible")
        assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
        sent = calls(exclude=[pair_audio_path(assignment_id=a.pk, label="ref") for a in Assignment.objects.filter(annotator=user)])
        # Seven requests for two pairs: 4 for the first, 3 for the second (its pair came in the first judgment's answer).
        kinds = [path.rsplit("/", 2)[-2] if method == "POST" else "clip" for method, path in sent]
        assert kinds == ["next", "clip", "clip", "judgment", "clip", "clip", "judgment"], sent
        assert not errors, errors
    finally:
        context.close()
    judged = list(Judgment.objects.filter(annotator=user).values_list("pair_id", flat=True))
    assert sorted(judged) == sorted([pair.pk, second.pk])
    for assignment in Assignment.objects.filter(annotator=user):
        assert assignment.state == Assignment.State.SUBMITTED
