import os

import pytest

from tests.browser import require_chromium
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
