import copy
import os
import uuid

import pytest

from tests.browser import launch, require_chromium
from tests.fixtures import FIXTURES, fixture_file


def pytest_collection_modifyitems(config, items):
    # Tests marked `services` need the real PostgreSQL/Redis; on embedded defaults they skip.
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    skip = pytest.mark.skip(reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    for item in items:
        if "services" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture starts a browser or loads data: skip locally, fail under CI (tests/prerequisites.py).
    if item.get_closest_marker("skip") is not None:
        return
    if item.get_closest_marker("browser") is not None:
        require_chromium()
    for marker in item.iter_markers("fixture_files"):
        for name in marker.args:
            fixture_file(FIXTURES / name)



@pytest.fixture(scope="module")
def browser():
    # One Chromium per module; every test opens its own page in a fresh context (own cookies and storage).
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = launch(p)
        yield instance
        instance.close()


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    # Study settings, consent, signed-in users and rate counters are cached and dropped on save;
    # a test's rollback restores the rows but not the cache, so each test gets a cache of its own.
    # A fresh key prefix instead of cache.clear(): on a shared Redis, clear() would flush
    # everyone's keys (Celery, Channels, other test runs).
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    yield
