"""axe-core on every page of ours (not Django's admin), for every role: no WCAG A/AA or best-practice violation."""

from __future__ import annotations

import pytest

from annotation import services
from tests.annotation.browser_helpers import listening_study, login  # noqa: F401  (the fixture is used by name)
from tests.browser import axe_violations
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, UserFactory

pytestmark = pytest.mark.browser



def check(page, url: str, found: dict, *, ready: str = "main") -> None:
    page.goto(url)
    page.wait_for_selector(ready, state="attached")
    violations = axe_violations(page)
    if violations:
        found[f"{url} [{ready}, {page.viewport_size['width']} px]"] = violations


def report(found: dict) -> str:
    return "\n".join(f"{url}: {v['id']} ({v['impact']}) {v['help']} at {v['targets']} {v['summary']}" for url, vs in found.items() for v in vs)


@pytest.mark.engine
@pytest.mark.timeout(240)
def test_every_page_has_no_axe_violations(live_server, browser, listening_study, settings):  # noqa: F811
    from arena.seed import arena_seed
    from arena.services import leaderboard_refresh
    from scoring.models import Judge
    from scoring.services import run_create
    from scoring.tasks import run_start
    from tests.arena.helpers import simulated_votes

    study, pair = listening_study
    annotator = UserFactory(username="axe-annotator", roles=["annotator"])
    services.study_annotator_add(study=study, user=annotator)
    services.consent_give(user=annotator)
    # Votes on a second pair give the report something to show; the first stays free for the annotator.
    judged = PairFactory(study=study, overlap=2)
    for name in ("axe-one", "axe-two"):
        JudgmentFactory(pair=judged, annotator=AnnotatorFactory(username=name))
    researcher = UserFactory(username="axe-researcher", roles=["researcher"])
    study.owner = researcher
    study.save(update_fields=["owner"])
    judge = Judge.objects.create(key="signal-axe", kind=Judge.Kind.SIGNAL)
    run = run_create(judge=judge, pair_ids=[pair.pk])
    run_start.apply(args=(run.pk,))
    settings.ARENA_LEADERBOARD_MIN_VOTES = 1
    settings.ARENA_LEADERBOARD_ROUNDS = 50
    arena_seed()
    simulated_votes(200)
    leaderboard_refresh()

    base = live_server.url
    found: dict = {}
    for viewport in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        # axe is injected as an inline script, which the pages' CSP refuses (as it should);
        # tests/reliability/test_csp_browser.py loads the pages without the bypass.
        context = browser.new_context(viewport=viewport, bypass_csp=True)
        page = context.new_page()
        # Anonymous visitors.
        check(page, f"{base}/accounts/login/", found)
        check(page, f"{base}/arena/", found, ready="#terms")
        page.get_by_role("button", name="I accept").click()
        page.wait_for_selector("#compose:not([hidden])")
        check(page, f"{base}/arena/", found, ready="#compose")
        check(page, f"{base}/arena/leaderboard/", found, ready="#board-rows tr")
        # An annotator: home, consent, the listening page before and after reading, a page refused.
        login(page, live_server, "axe-annotator")
        check(page, f"{base}/", found)
        check(page, f"{base}/consent/", found)
        check(page, f"{base}/consent/withdraw/", found)
        check(page, f"{base}/studies/{study.name}/annotate/", found, ready="#btn-read")
        page.click("#btn-read")
        page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
        violations = axe_violations(page)
        if violations:
            found[f"{base}/studies/{study.name}/annotate/ [unlocked, {viewport['width']} px]"] = violations
        check(page, f"{base}/manage/studies/", found)
        # A researcher: studies, a study, its form, judges, runs, a run, the report.
        page.context.clear_cookies()
        login(page, live_server, "axe-researcher")
        for path in (
            "/manage/studies/",
            "/manage/studies/new/",
            f"/manage/studies/{study.name}/",
            f"/manage/studies/{study.name}/edit/",
            "/scoring/judges/",
            "/scoring/runs/",
            f"/scoring/runs/{run.pk}/",
            f"/scoring/studies/{study.name}/report/",
            "/scoring/reports/",
            f"/manage/import/?study={study.name}",
        ):
            check(page, base + path, found)
        context.close()
    assert not found, report(found)
    from django.db import connections

    connections.close_all()
