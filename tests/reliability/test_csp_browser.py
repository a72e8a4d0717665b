"""Under the Content-Security-Policy, the pages still work in a real browser and nothing is refused."""

from __future__ import annotations

import pytest

from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    "/arena/",
    "/arena/leaderboard/",
    "/",
    "/manage/studies/",
    "/manage/studies/new/",
    "/scoring/judges/",
    "/scoring/runs/",
    "/admin/",
    "/admin/annotation/study/",
    "/admin/annotation/study/add/",
    "/admin/annotation/study/import-pairs/",
    "/admin/auth/user/",
    "/no/such/page/",
    "/studies/csp-study/annotate/",
    "/scoring/studies/csp-study/report/",
]



def watched_page(browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    refused: list[str] = []
    page.on("console", lambda msg: refused.append(msg.text) if "Content Security Policy" in msg.text or "Refused to" in msg.text else None)
    page.on("pageerror", lambda exc: refused.append(f"page error: {exc}"))
    return page, refused


@pytest.mark.engine
def test_pages_load_under_the_policy_without_refusals(live_server, browser):
    from annotation.services import consent_give

    study = StudyFactory(name="csp-study")
    PairFactory(study=study)
    user = UserFactory(username="csp-admin", password="csp-pw", is_staff=True, is_superuser=True, roles=["annotator", "researcher"])
    StudyAnnotatorFactory(study=study, annotator=user)
    consent_give(user=user)
    page, refused = watched_page(browser)
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "csp-admin")
    page.fill("#id_password", "csp-pw")
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "/accounts/login/" not in page.url
    for path in PAGES:
        response = page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        assert response.status in (200, 404), (path, response.status)
        assert "Content-Security-Policy" in {k.title(): v for k, v in response.all_headers().items()}, path
    assert not refused, refused


@pytest.mark.engine
def test_swagger_ui_renders_from_local_assets_under_the_policy(live_server, browser):
    page, refused = watched_page(browser)
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url) if not request.url.startswith((live_server.url, "data:", "blob:")) else None)
    page.goto(live_server.url + "/api/docs/")
    page.wait_for_selector(".opblock", timeout=30000)  # the operations list: Swagger UI ran and read the schema
    assert page.locator(".opblock").count() >= 15
    assert not outside, outside
    assert not refused, refused
