"""The leaderboard of a fresh demo in a real browser: seeded demo votes rank every system and the page says
how many of the votes are seeded; without a websocket (a plain WSGI server) the badge says the page polls,
and a refit still shows within 3 s; when the board cannot be fetched the badge says so."""

from __future__ import annotations

import io
import re
import time

import pytest
from django.core.management import call_command

from tests.browser import PHONE, shots_dir

pytestmark = pytest.mark.browser


def fits_its_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_seeded_board_is_labelled_and_polls_without_a_websocket(live_server, browser, settings, tmp_path):
    from arena.models import Battle, Vote
    from arena.seed_votes import ROUNDS
    from arena.services import leaderboard_refresh

    settings.ARENA_CLIP_SECONDS = 1.0
    settings.ARENA_LEADERBOARD_MIN_VOTES = 20
    settings.ARENA_LEADERBOARD_ROUNDS = 200
    call_command("seed_arena", stdout=io.StringIO())
    seeded = 15 * ROUNDS["instrumental"]
    shots = shots_dir(tmp_path)

    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    assert page.locator("#board-rows tr").count() == 6
    assert "aurora" in page.inner_text("#board-rows tr:first-child")
    note = page.locator("#seeded-note")
    assert note.is_visible() and f"All {seeded} votes on this board are seeded demo votes" in note.inner_text()
    assert "no one listened" in note.inner_text() and "release leaves them out" in note.inner_text()
    # pytest-django's server has no websockets: the badge says what the page does instead of "live".
    page.wait_for_function("document.getElementById('live').textContent === 'updating every 2 s'", timeout=10_000)
    page.screenshot(path=str(shots / "arena-leaderboard-seeded.png"), full_page=True)

    # A visitor's vote and a refit, made outside the page: the polling page shows them within 3 s.
    battle = Battle.objects.filter(is_instrumental=True).first()
    mine = Battle.objects.create(
        visitor=battle.visitor, prompt="a visitor's prompt", is_instrumental=True, duration_requested=1.0, seed=1,
        system_a=battle.system_a, system_b=battle.system_b, clip_a=battle.clip_a, clip_b=battle.clip_b, status=Battle.Status.VOTED,
    )
    Vote.objects.create(battle=mine, visitor=battle.visitor, choice="a", listen_seconds_a=5.0, listen_seconds_b=5.0)
    leaderboard_refresh()
    start = time.monotonic()
    page.wait_for_function(f"document.getElementById('board-meta').textContent.startsWith('{seeded + 1} votes')", timeout=3_000)
    print(f"leaderboard refit shown {time.monotonic() - start:.2f} s after it was stored (polling)")
    assert f"Includes {seeded} seeded demo votes of {seeded + 1}" in note.inner_text()

    # The vocal board carries its own count.
    page.get_by_role("tab", name="Vocal").click()
    assert f"All {15 * ROUNDS['vocal']} votes on this board are seeded demo votes" in note.inner_text()
    page.get_by_role("tab", name="Instrumental").click()

    # The board cannot be fetched: the badge stops claiming the page is current.
    api = re.compile(r"/arena/api/leaderboard/")
    page.route(api, lambda route: route.abort())
    page.wait_for_function("document.getElementById('live').textContent.startsWith('server unreachable')", timeout=6_000)
    page.unroute(api)
    page.wait_for_function("document.getElementById('live').textContent === 'updating every 2 s'", timeout=6_000)
    assert errors == []
    context.close()

    phone = browser.new_context(**PHONE, bypass_csp=True)
    page = phone.new_page()
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    assert page.locator("#seeded-note").is_visible() and fits_its_width(page)
    # The interval plot's tick labels do not run into each other on a phone.
    gaps = page.evaluate(
        """(() => {
            const ticks = [...document.querySelectorAll('#plot svg text')].filter((t) => /^-?[0-9]+$/.test(t.textContent)).map((t) => t.getBoundingClientRect());
            return ticks.slice(1).map((r, i) => r.left - ticks[i].right);
        })()"""
    )
    assert gaps and min(gaps) > 4, gaps
    page.set_viewport_size({"width": 390, "height": page.evaluate("document.documentElement.scrollHeight")})
    page.screenshot(path=str(shots / "arena-leaderboard-seeded-390.png"))
    phone.close()


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_a_researchers_home_and_release_tables_fit_a_phone(live_server, browser, tmp_path):
    """Tables of many columns (the home page's studies, the release builds) stack into labelled lines at 390 px."""
    from django.utils import timezone

    from arena.models import ReleaseBuild
    from tests.factories import StudyFactory, UserFactory

    researcher = UserFactory(username="res", roles=["researcher"])
    StudyFactory(name="phone-study", title="A study with a long enough title to wrap", owner=researcher)
    ReleaseBuild.objects.create(
        state="done", stage="done", battles=331, audio_files=662, size_bytes=188_400_000, include_seeded=True,
        file_name="arena-battles-20260101-1.zip", created_by=researcher, finished_at=timezone.now(),
    )
    context = browser.new_context(**PHONE, bypass_csp=True)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/?next=/")
    page.fill("#id_username", "res")
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("#home-research")
    past_edge = "[...document.querySelectorAll('table td')].filter((t) => t.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).length"
    for path, cells in (("/", ["Study", "Pairs", "Annotators", "Judgments", "Status", "Data"]), ("/arena/release/", ["Built", "State", "Battles", "Audio files", "Size", "Download"])):
        page.goto(live_server.url + path)
        page.wait_for_selector("table.stack-phone td")
        assert fits_its_width(page) and page.evaluate(past_edge) == 0, path
        text = page.inner_text("table.stack-phone tbody")
        # Each value is labelled by its column, since the header row is only for screen readers here.
        labels = page.evaluate("[...document.querySelectorAll('table.stack-phone tbody td')].map((t) => getComputedStyle(t, '::before').content)")
        assert all(f'"{c}"' in labels for c in cells), labels
        assert page.locator("table.stack-phone thead").bounding_box()["height"] <= 1
        assert text
    assert "(with seeded demo votes)" in page.inner_text("#builds")
    page.screenshot(path=str(shots_dir(tmp_path) / "arena-release-390.png"), full_page=True)
    context.close()
