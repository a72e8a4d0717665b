"""The leaderboard with style control, category boards and the outlier screen in a real browser, at 1280 and 390 px."""

from __future__ import annotations

import pytest

from tests.browser import PHONE, axe_violations, overflow, shots_dir

pytestmark = pytest.mark.browser


def arena_with_categories():
    """The style test's arena with some Japanese prompts, a few rock ones (too few for a board) and one visitor voting against the board."""
    from arena.models import ArenaSystem, Battle, Visitor, Vote
    from tests.arena.helpers import styled_arena

    styled_arena(n_battles=500)
    for k, battle in enumerate(Battle.objects.order_by("id")):
        # Vocal battles (k % 4 == 0) have lyrics, whose script decides their language: the Japanese prompts are instrumental.
        battle.prompt = "静かなピアノ" if k % 4 == 1 else "energetic rock anthem" if k % 25 == 2 else f"calm ambient pads {k % 30}"
        battle.is_prebaked = k % 3 == 0
        battle.save(update_fields=["prompt", "is_prebaked"])
    from arena.leaderboard import board_with_style
    from arena.selectors import vote_rows

    rows, _ = vote_rows()
    rating = {}
    for instrumental in (True, False):
        rating[instrumental] = {r["system"]: r["rating"] for r in board_with_style([r for r in rows if r.is_instrumental == instrumental], rounds=0)["rows"]}
    ArenaSystem.objects.filter(system__name="ash").update(licence="CC-BY-NC-4.0", training_data="licensed stock music", open_weights=True)
    odd = Visitor.objects.order_by("id").first()
    for vote in Vote.objects.filter(visitor=odd).select_related("battle__system_a__system", "battle__system_b__system"):
        # Always for the system the board rates lower.
        board = rating[vote.battle.is_instrumental]
        a, b = vote.battle.system_a.system.name, vote.battle.system_b.system.name
        vote.choice = "a" if board[a] < board[b] else "b"
        vote.save(update_fields=["choice"])


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_board_with_style_control_categories_and_screen_at_desktop_and_phone_width(live_server, browser, settings, tmp_path):
    from arena.services import leaderboard_refresh

    settings.ARENA_LEADERBOARD_ROUNDS = 100
    settings.ARENA_LEADERBOARD_MIN_VOTES = 20
    settings.ARENA_CATEGORY_MIN_VOTES = 50
    arena_with_categories()
    payload = leaderboard_refresh().payload
    # The votes spread over three months, each month's boards snapshotted: the rating-over-time page has three points.
    from datetime import datetime, timezone

    from arena.history import board_snapshots_fill
    from arena.models import Vote

    for k, pk in enumerate(Vote.objects.order_by("id").values_list("id", flat=True)):
        Vote.objects.filter(pk=pk).update(created_at=datetime(2026, 1 + k % 3, 5, tzinfo=timezone.utc))
    assert board_snapshots_fill(now=datetime(2026, 4, 2, tzinfo=timezone.utc)) == ["2026-01", "2026-02", "2026-03"]
    shots = shots_dir(tmp_path)
    errors: list[str] = []

    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    style = payload["boards"]["instrumental"]["style"]
    assert page.locator("#board-rows tr").count() == 4
    first = page.inner_text("#board-rows tr:first-child")
    top = payload["boards"]["instrumental"]["rows"][0]
    styled_top = next(r for r in style["rows"] if r["system"] == top["system"])
    assert top["system"] in first and f"{styled_top['rating']:.1f}" in first
    assert page.locator("th.style-col").first.is_visible() and page.locator("#board-groups").is_visible()
    # The covariates' effects: loudness leads the votes in this arena.
    covariates = page.inner_text("#style-rows")
    assert "Loudness as generated" in covariates and "Vocals" not in covariates
    assert "vocals" in page.inner_text("#style-notes").lower()  # no variation on the instrumental board
    loud = style["covariates"]["loudness"]
    assert f"+{loud['coefficient']:.3f}" in covariates
    # The screen: the visitor voting for the weakest system is flagged and its votes left out.
    screen = payload["screen"]
    assert screen["flagged"] and page.locator("#screen-card").is_visible()
    assert f"{len(screen['flagged'])} flagged" in page.inner_text("#screen-meta")
    assert page.locator("#screen-rows tr").count() == len(screen["boards"]["instrumental"]["rows"])
    # The systems' metadata and measured real-time factor.
    ash = payload["systems"]["ash"]
    systems = page.inner_text("#systems-rows")
    assert "CC-BY-NC-4.0" in systems and "open weights" in systems and "licensed stock music" in systems
    assert f"{ash['real_time_factor']:.2g}" in systems and f"{ash['real_time_factor_clips']} clips" in systems
    page.screenshot(path=str(shots / "arena-leaderboard-style.png"), full_page=True)
    assert axe_violations(page) == []

    # Categories: a language board, then one with too few votes.
    page.select_option("#category", "language:japanese")
    japanese = payload["categories"]["families"]["language"]["values"]["japanese"]
    page.wait_for_function(f"document.getElementById('board-meta').textContent.startsWith('{japanese['votes']} votes')")
    assert page.locator("#board-rows tr").count() == len(japanese["rows"]) and not page.locator("#screen-card").is_visible()
    assert page.get_attribute(".board-tabs button[data-board=instrumental]", "aria-selected") == "false"
    assert "Language of the prompt: japanese" in page.inner_text("#category-about")
    page.screenshot(path=str(shots / "arena-leaderboard-category.png"))
    rock = payload["categories"]["families"]["genre"]["values"]["rock"]
    assert rock["too_few"]
    page.select_option("#category", "genre:rock")
    assert f"this category has {rock['votes']} votes; a category board is fitted from 50" in page.inner_text("#board-rows")
    assert page.locator("#style-card").is_hidden()
    page.locator("#board-meta").locator("xpath=..").screenshot(path=str(tmp_path / "too-few.png"))
    page.get_by_role("tab", name="Vocal").click()
    assert page.eval_on_selector("#category", "s => s.value") == "" and page.locator("#board-rows tr").count() == len(payload["boards"]["vocal"]["rows"])
    assert errors == []
    context.close()

    phone = browser.new_context(**PHONE, bypass_csp=True)
    page = phone.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server.url + "/arena/leaderboard/")
    page.wait_for_selector("#board-rows tr")
    page.screenshot(path=str(shots / "arena-leaderboard-style-390.png"), full_page=True)
    # The board's card and the screen's alone, at a size one can read.
    page.locator("#board-meta").locator("xpath=..").screenshot(path=str(tmp_path / "board-card-390.png"))
    page.locator("#screen-card").screenshot(path=str(tmp_path / "screen-card-390.png"))
    page.locator("#systems-card").screenshot(path=str(tmp_path / "systems-card-390.png"))
    assert overflow(page) == 0
    # Every cell of the board is inside the screen: both ratings, intervals and the change.
    past = page.evaluate("[...document.querySelectorAll('#board-rows td, #style-rows td, #screen-rows td, #systems-rows td')].filter((t) => t.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).length")
    assert past == 0
    page.select_option("#category", "language:japanese")
    assert overflow(page) == 0
    page.goto(live_server.url + "/arena/leaderboard/history/?system=ash")
    page.wait_for_selector("#history-plot svg")
    assert page.locator("#history-plot circle").count() == 3 and page.locator("#history-rows tr").count() == 3
    assert "ash on the instrumental board: 3 of 3 snapshots" in page.inner_text("#history-meta")
    assert overflow(page) == 0
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "arena-history-390.png"), full_page=True)
    page.get_by_role("tab", name="Vocal").click()
    page.select_option("#history-system", "birch")
    assert "birch on the vocal board" in page.inner_text("#history-meta")
    assert errors == []
    phone.close()
