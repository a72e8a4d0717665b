"""/api/schema/ is generated once per process for each format and language, then served from memory."""

from __future__ import annotations

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.test import APIRequestFactory

from common import api_schema

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    api_schema.clear()
    yield
    api_schema.clear()


@pytest.fixture
def generations(monkeypatch):
    calls = []
    real = SchemaGenerator.get_schema

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counting)
    return calls


def _fresh(query: str = "", accept: str | None = None) -> bytes:
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    request = APIRequestFactory().get("/api/schema/" + query, **headers)
    response = SpectacularAPIView.as_view()(request)
    response.render()
    return response.content


@pytest.mark.parametrize("query,accept", [("", None), ("?format=json", None), ("", "application/json"), ("?lang=de", None)])
def test_cached_bytes_equal_a_freshly_generated_schema(query, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    first = Client().get("/api/schema/" + query, **headers)
    second = Client().get("/api/schema/" + query, **headers)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content == _fresh(query, accept)


def test_the_second_request_does_not_generate_again(generations):
    client = Client()
    assert client.get("/api/schema/").status_code == 200
    assert len(generations) == 1
    assert client.get("/api/schema/").status_code == 200
    assert len(generations) == 1
    # Another format is another rendering, generated once too.
    json_body = client.get("/api/schema/?format=json")
    assert json_body["Content-Type"].startswith("application/vnd.oai.openapi+json")
    client.get("/api/schema/?format=json")
    assert len(generations) == 2


def test_made_up_languages_and_versions_share_one_entry(generations):
    client = Client()
    for query in ("", "?lang=xx-nope", "?lang=zz", "?version=1", "?version=anything"):
        assert client.get("/api/schema/" + query).status_code == 200
    assert len(generations) == 1


def test_if_none_match_gives_304_with_the_etag():
    client = Client()
    first = client.get("/api/schema/")
    etag = first["ETag"]
    assert etag.startswith('"') and "max-age" in first["Cache-Control"]
    again = client.get("/api/schema/", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    other = client.get("/api/schema/", HTTP_IF_NONE_MATCH='"not-it"')
    assert other.status_code == 200 and other.content == first.content


def test_formats_have_different_etags():
    client = Client()
    assert client.get("/api/schema/")["ETag"] != client.get("/api/schema/?format=json")["ETag"]
