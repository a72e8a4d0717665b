"""A full battle in a real browser on the built-in demo systems: terms, random prompt, real playback, vote, reveal, leaderboard."""

from __future__ import annotations

import os

import pytest

from tests.arena.helpers import simulated_votes
from tests.browser import DOC_SHOTS, launch

pytestmark = pytest.mark.browser


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        # Playwright's wait_for_function runs its predicate through eval, which the pages' CSP forbids (as it should);
        # tests/reliability/test_csp_browser.py loads these pages without the bypass and checks nothing is refused.
        page = browser.new_page(viewport={"width": 1100, "height": 900}, bypass_csp=True)
        yield page
        browser.close()


def arena_hear(page, side: str, seconds: float, timeout_s: float = 20.0) -> None:
    """Play `side` on the battle's transport (its key, then Space when stopped) until the server has counted `seconds` of it."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if float(page.get_attribute(f"#heard-text-{side}", "data-heard") or 0) >= seconds:
            return
        state = page.evaluate("window.auditoriumArena.snapshot()")
        if state["active"] != side:
            page.keyboard.press(side.lower())
        elif not state["playing"]:
            page.keyboard.press("Space")
        page.wait_for_timeout(150)
    raise AssertionError(f"clip {side} was not counted for {seconds} s: {page.evaluate('window.auditoriumArena.snapshot()')}")


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_full_battle_in_a_real_browser(live_server, browser_page, settings, tmp_path):
    from arena.models import Vote
    from arena.seed import arena_seed
    from arena.services import leaderboard_refresh

    settings.ARENA_MIN_LISTEN_SECONDS = 1.0
    settings.ARENA_CLIP_SECONDS = 3.0
    settings.ARENA_LEADERBOARD_MIN_VOTES = 1
    settings.ARENA_LEADERBOARD_ROUNDS = 200
    settings.ARENA_LEADERBOARD_DEBOUNCE_SECONDS = 0
    arena_seed()
    # AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots; otherwise they stay untouched.
    SHOTS = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser_page
    page.goto(live_server.url + "/arena/")
    page.get_by_role("button", name="I accept").click()
    page.get_by_role("button", name="Random prompt").click()
    page.wait_for_function("document.getElementById('prompt').value.length > 0")
    page.get_by_role("button", name="Start battle").click()
    page.wait_for_selector("#battle:not([hidden])", timeout=60000)
    # Focus follows the battle once it is ready, instead of staying on the hidden Start button.
    assert page.evaluate("document.activeElement.id") == "battle-title"
    prompt = page.inner_text("#battle-prompt")

    names = ["aurora", "clipper", "hiss", "detune", "wobble", "draggy", "auditorium demo"]
    html = page.content().lower()
    assert not [n for n in names if n in html], "a system name is on the page before the vote"
    vote_a = page.get_by_role("button", name="A is better")
    assert vote_a.is_disabled()

    # Real playback on the one A/B transport: A, then the same moment of B, until the server has counted the minimum.
    page.wait_for_function("window.auditoriumArena.snapshot().ready", timeout=20000)
    page.click("#btn-play")
    arena_hear(page, "A", 1.0)
    arena_hear(page, "B", 1.0)
    try:
        # Generous: on a loaded machine the vote opens with the next listening answer, which can be seconds away.
        page.wait_for_function("!document.querySelector('button.vote[data-vote=a]').disabled", timeout=30000)
    except Exception as exc:
        raise AssertionError(f"the vote stayed closed after both clips were counted: {page.evaluate('window.auditoriumArena.snapshot()')}") from exc
    if page.evaluate("window.auditoriumArena.snapshot().playing"):
        page.keyboard.press("Space")
    # Past the minimum the count reads as done, not as "8.1 of 5.0".
    assert "enough to vote" in page.inner_text("#heard-text-A") and " of " not in page.inner_text("#heard-text-A")

    # A reload mid-battle brings the same battle back, with what the server heard and the vote open.
    page.reload()
    page.wait_for_selector("#battle:not([hidden])", timeout=20000)
    assert page.inner_text("#battle-prompt") == prompt
    assert page.locator("#compose").is_hidden()
    page.wait_for_function("!document.querySelector('button.vote[data-vote=a]').disabled", timeout=10000)
    assert page.evaluate("document.activeElement.id") == "battle-title"
    page.fill("#feedback", "A has a cleaner mix.")
    page.screenshot(path=str(SHOTS / "arena-battle.png"), full_page=True)

    vote_a.click()
    page.wait_for_selector("#reveal-a:not([hidden])", timeout=20000)
    revealed = page.inner_text("#reveal-a") + page.inner_text("#reveal-b")
    assert any(n in revealed.lower() for n in names[:-1]) and "Generated in" in revealed
    assert page.get_by_role("button", name="B is better").is_disabled()
    page.screenshot(path=str(SHOTS / "arena-reveal.png"), full_page=True)
    vote = Vote.objects.get()
    assert vote.choice == "a" and vote.listen_seconds_a >= 1.0 and vote.listen_seconds_b >= 1.0
    assert vote.feedback == "A has a cleaner mix."

    # The leaderboard page, with the real vote plus simulated ones so the plot has something to show.
    simulated_votes(600)
    styled = leaderboard_refresh().payload["boards"]["instrumental"]["style"]["rows"]
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    assert page.locator("#board-rows tr").count() == 6
    assert page.locator("#plot svg circle.plain").count() == 6
    # Style control needs each clip's loudness as generated: only the browser's own battle has it, so at most its two
    # systems are in that fit (none on this board when its random prompt made it a vocal battle).
    assert page.locator("#plot svg circle.styled").count() == len(styled) <= 2
    first = page.inner_text("#board-rows tr:first-child")
    assert "aurora" in first
    page.screenshot(path=str(SHOTS / "arena-leaderboard.png"), full_page=True)

    # On a phone: no sideways scrolling of the page (the table scrolls in its own box), labels readable.
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("Number(document.querySelector('#plot svg').getAttribute('width')) <= 390")
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
    smallest = page.evaluate(
        "Math.min(...[...document.querySelectorAll('#plot svg text')].map((t) => t.getBoundingClientRect().height))"
    )
    assert smallest >= 11, smallest
    page.screenshot(path=str(SHOTS / "arena-leaderboard-phone.png"), full_page=True)

    # A system under the listing threshold is named as preliminary with its count; an empty board shows no chart card.
    settings.ARENA_LEADERBOARD_MIN_VOTES = 10_000
    leaderboard_refresh()
    page.reload()
    page.wait_for_selector("#preliminary:not([hidden])")
    assert "Preliminary" in page.inner_text("#preliminary") and "votes)" in page.inner_text("#preliminary")
    assert page.locator("#plot-card").is_hidden()
    # While Playwright's event loop runs, Django's context-local connections hand this thread a
    # separate connection; close it, or it outlives the test and blocks dropping the test database.
    from django.db import connections

    connections.close_all()
