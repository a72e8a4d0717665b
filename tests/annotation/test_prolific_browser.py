"""In Chromium, on a desktop and at 390 px: a researcher stores a Prolific token, ties a link, fetches the submissions,
approves by rule and pays one participant a bonus, against the local fake Prolific; the page passes axe and fits."""

from __future__ import annotations

import pytest

from annotation.prolific_models import BonusState, ProlificBonus
from tests.annotation.browser_helpers import login
from tests.browser import DESKTOP, PHONE, axe_violations, overflow

from .fake_prolific import FakeProlific
from .prolific_helpers import PIDS, TOKEN, crowd_study

pytestmark = pytest.mark.browser


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_researcher_approves_by_rule_and_pays_a_bonus_from_the_prolific_page(live_server, browser, transactional_db, settings, device):
    with FakeProlific(token=TOKEN) as fake:
        settings.PROLIFIC_API_BASE = fake.base_url
        settings.PROLIFIC_TIMEOUT_S, settings.PROLIFIC_BACKOFF_S = 5.0, 0.0
        crowd = crowd_study(fake, name=f"prolific-{device}")
        study = crowd["study"]
        context = browser.new_context(**(PHONE if device == "phone" else DESKTOP), bypass_csp=True)  # axe-core is injected
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            login(page, live_server, crowd["owner"].username)
            page.goto(f"{live_server.url}/manage/studies/{study.name}/")
            page.click("#prolific-page-link")
            page.fill("#id_token", TOKEN)
            page.click("text=Store the token")
            page.wait_for_selector("text=A token is stored")
            assert TOKEN not in page.content() and page.input_value("#id_token") == ""
            page.select_option("#id_link_id", str(crowd["link"].pk))
            page.fill("#id_prolific_study_id", crowd["study_id"])
            page.click("button:has-text('Tie')")
            page.click("text=Fetch submissions")
            page.wait_for_selector(".prolific-submissions")
            assert "6 submission(s) fetched" in page.inner_text(".messages") and "1 not matched" in page.inner_text(".prolific-tie")
            form = page.locator(".prolific-rule").first
            form.locator("input[name=completed]").check()
            form.locator("input[name=screen_passed]").check()
            form.locator("input[name=gold_min]").fill("0.75")
            form.locator("button[type=submit]").click()
            page.wait_for_selector("text=2 decision(s) queued")
            assert {pid for pid in PIDS if fake.submissions[crowd["subs"][pid]]["status"] == "APPROVED"} == {PIDS[0], PIDS[1]}
            row = page.locator("tr", has_text=crowd["people"][PIDS[2]].user.username)
            row.locator("summary").click()
            row.locator("input[name=amount]").fill("0.40")
            row.locator("input[name=reason]").fill("careful listening")
            row.locator("text=Pay bonus").click()
            page.wait_for_selector("text=1 bonus(es) queued")
            assert fake.paid(PIDS[2]) == [40] and ProlificBonus.objects.get().state == BonusState.PAID
            # Read again without the flash message (the site's message list is checked with the other pages).
            page.goto(page.url)
            assert overflow(page) == 0
            violations = axe_violations(page)
            assert not violations, violations
            assert TOKEN not in page.content()
            assert not errors, errors
        finally:
            context.close()
