"""Security headers, the Content-Security-Policy included, on every page (each URL pattern), and API docs without a CDN."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory

from tests.reliability.routes import all_routes, url_for, world  # noqa: F401  (world is a fixture)

EXPECTED = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def check_headers(response, where: str) -> None:
    for name, value in EXPECTED.items():
        assert response.headers.get(name) == value, f"{where}: {name} is {response.headers.get(name)!r}"
    assert "camera=()" in response.headers.get("Permissions-Policy", ""), where
    csp = response.headers.get("Content-Security-Policy", "")
    directives = {part.split()[0]: part.split()[1:] for part in csp.split(";") if part.strip()}
    assert directives.get("default-src") == ["'self'"], f"{where}: {csp!r}"
    assert directives.get("script-src") == ["'self'"] and directives.get("style-src") == ["'self'"], f"{where}: {csp!r}"
    assert directives.get("object-src") == ["'none'"] and directives.get("frame-ancestors") == ["'none'"], f"{where}: {csp!r}"
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "*" not in csp, where


def pages(objects) -> list[str]:
    kwargs = {**objects["kwargs"], "public_id": uuid.uuid4(), "side": "a"}
    return [url_for(name, converters, kwargs) for name, converters in sorted(all_routes().items())]


@pytest.mark.django_db
def test_every_page_sends_the_security_headers_to_everyone(world):  # noqa: F811
    admin = UserFactory(username="headers-admin", is_staff=True, is_superuser=True)
    signed_in = Client()
    signed_in.force_login(admin)
    urls = pages(world) + ["/admin/", "/admin/annotation/study/", "/admin/annotation/study/import-pairs/", "/admin/login/", "/no/such/page/"]
    assert len(urls) > 40
    for client, who in ((Client(), "anonymous"), (signed_in, "admin")):
        for url in urls:
            response = client.get(url)
            check_headers(response, f"{who} GET {url} ({response.status_code})")


@pytest.mark.django_db
def test_refusals_carry_the_headers_too(client):
    check_headers(client.post("/api/scoring/runs/", "[" * 5000, content_type="application/json"), "401/403 before parse")
    too_big = client.generic("POST", "/arena/api/battles/", b"", content_type="application/json", CONTENT_LENGTH=str(10**10))
    assert too_big.status_code == 413
    check_headers(too_big, "413")


def _html_without_inline_code(html: str, where: str) -> None:
    for match in re.finditer(r"<script\b([^>]*)>(.*?)</script>", html, flags=re.S | re.I):
        attrs, body = match.groups()
        if "application/json" in attrs:
            continue  # data, never run
        assert "src=" in attrs and not body.strip(), f"{where}: inline script {match.group(0)[:120]!r}"
    assert not re.search(r"<style\b", html, flags=re.I), f"{where}: inline <style>"
    assert not re.search(r"\son[a-z]+\s*=", html, flags=re.I), f"{where}: inline event handler"
    assert not re.search(r"\sstyle\s*=", html, flags=re.I), f"{where}: style attribute"


@pytest.mark.django_db
def test_our_pages_hold_no_inline_code_the_policy_would_block(world):  # noqa: F811
    admin = UserFactory(username="inline-admin", is_staff=True, is_superuser=True, roles=["annotator", "researcher"])
    client = Client()
    client.force_login(admin)
    for url in pages(world):
        response = client.get(url)
        if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
            _html_without_inline_code(response.content.decode(), url)


@pytest.mark.django_db
def test_api_docs_load_swagger_ui_from_our_static_files(client):
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    html = page.content.decode()
    _html_without_inline_code(html, "/api/docs/")
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in s for s in sources), sources
    assert all(s.startswith("/") for s in sources), f"an asset from another origin: {sources}"
    assert "cdn" not in html.lower() and "@latest" not in html
    script = client.get(reverse("api-docs") + "?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()
