"""The arena on the listening page's A/B transport, in a real browser: a switch at the same moment,
the listening it reports reaching the server's record, the place kept across a reload; and the
leaderboard on a 390 px phone with every column in view."""

from __future__ import annotations

import pytest

from tests.arena.helpers import simulated_votes
from tests.browser import PHONE, shots_dir

pytestmark = pytest.mark.browser


@pytest.fixture
def arena_settings(settings):
    from arena.seed import arena_seed

    settings.ARENA_MIN_LISTEN_SECONDS = 1.0
    settings.ARENA_CLIP_SECONDS = 6.0
    settings.ARENA_LEADERBOARD_MIN_VOTES = 1
    settings.ARENA_LEADERBOARD_ROUNDS = 200
    settings.ARENA_LEADERBOARD_DEBOUNCE_SECONDS = 0
    arena_seed()
    return settings


def snapshot(page) -> dict:
    return page.evaluate("window.auditoriumArena.snapshot()")


def wait_until(page, condition: str, timeout: int = 15_000) -> None:
    page.wait_for_function(f"(() => {{ const s = window.auditoriumArena.snapshot(); return {condition}; }})()", timeout=timeout)


def start_battle(page, url: str) -> None:
    page.goto(url + "/arena/")
    page.get_by_role("button", name="I accept").click()
    page.get_by_role("button", name="Random prompt").click()
    page.wait_for_function("document.getElementById('prompt').value.length > 0")
    page.get_by_role("button", name="Start battle").click()
    page.wait_for_selector("#battle:not([hidden])", timeout=60_000)
    wait_until(page, "s.ready", timeout=20_000)


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_ab_switch_keeps_the_moment_and_the_place_survives_a_reload(live_server, browser, arena_settings, tmp_path):
    from arena.models import ListenEvent

    page = browser.new_page(viewport={"width": 1100, "height": 900}, bypass_csp=True)
    start_battle(page, live_server.url)
    # One player for both clips: two waveforms, one set of transport buttons, no native players.
    assert page.locator("audio").count() == 0
    assert page.locator("canvas.wave").count() == 2 and page.locator("#btn-switch").count() == 1

    page.click("#btn-play")
    wait_until(page, "s.playing && s.position > 0.8")
    before = snapshot(page)
    page.keyboard.press("s")
    after = snapshot(page)
    assert before["active"] == "A" and after["active"] == "B" and after["playing"]
    # The switch lands on the same moment: the position moved only by the audio time that passed.
    drift = (after["position"] - before["position"]) - (after["audioTime"] - before["audioTime"])
    print(f"A -> B at {before['position']:.3f} s: lands at {after['position']:.3f} s, drift against the audio clock {drift * 1000:.2f} ms")
    assert abs(drift) < 0.010, (before, after)
    assert abs(after["position"] - before["position"]) < 0.25, (before, after)
    page.wait_for_timeout(400)
    assert snapshot(page)["position"] > after["position"] + 0.2  # still playing on, not restarted

    # Paused, a switch changes nothing but the clip.
    page.keyboard.press("Space")
    paused = snapshot(page)
    page.keyboard.press("a")
    switched = snapshot(page)
    assert switched["active"] == "A" and not switched["playing"] and abs(switched["position"] - paused["position"]) < 1e-6

    # The server's record has the switches, on the sides the page named.
    wait_until(page, "s.pending === 0")
    kinds = list(ListenEvent.objects.order_by("seq").values_list("kind", "side"))
    assert ("switch", "b") in kinds and ("switch", "a") in kinds and kinds[0] == ("play", "a")
    page.screenshot(path=str(shots_dir(tmp_path) / "arena-ab-transport.png"), full_page=True)

    # A loop on B, then a reload: the same battle, clip, moment and loop come back.
    page.keyboard.press("b")
    page.keyboard.press("Home")
    page.keyboard.press("l")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("l")
    kept = snapshot(page)
    assert kept["loop"] is not None and kept["active"] == "B"
    page.reload()
    page.wait_for_selector("#battle:not([hidden])", timeout=20_000)
    wait_until(page, "s.ready", timeout=20_000)
    back = snapshot(page)
    assert back["battle"] == kept["battle"] and back["active"] == "B" and not back["playing"]
    assert abs(back["position"] - kept["position"]) < 0.05 and back["loop"] == kept["loop"]
    page.close()


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_leaderboard_fits_a_390px_phone(live_server, browser, arena_settings, tmp_path):
    from arena.services import leaderboard_refresh

    simulated_votes(400)
    leaderboard_refresh()
    context = browser.new_context(**PHONE, bypass_csp=True)
    page = context.new_page()
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    assert page.locator("#board-rows tr").count() == 6
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
    # Every column in view: the table is no wider than its box, so nothing scrolls or is cut off.
    fit = page.evaluate(
        """(() => {
            const box = document.querySelector('#leaderboard .table-scroll');
            const table = box.querySelector('table');
            const right = box.getBoundingClientRect().right;
            const cells = [...table.querySelectorAll('th, td')].map((c) => c.getBoundingClientRect().right);
            return {box: box.clientWidth, table: table.scrollWidth, scroll: box.scrollWidth, overhang: Math.max(...cells) - right};
        })()"""
    )
    assert fit["table"] <= fit["box"] and fit["scroll"] <= fit["box"] and fit["overhang"] <= 0.5, fit
    header = page.inner_text("table.board thead")
    assert "95% interval" in " ".join(header.split()), header
    folder = shots_dir(tmp_path)
    page.set_viewport_size({"width": 390, "height": page.evaluate("document.documentElement.scrollHeight")})
    page.screenshot(path=str(folder / "arena-leaderboard-390.png"))
    context.close()
