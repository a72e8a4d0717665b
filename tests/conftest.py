import os

import pytest


def pytest_collection_modifyitems(config, items):
    # Tests marked `services` need the real PostgreSQL/Redis; on embedded defaults they skip.
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    skip = pytest.mark.skip(reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    for item in items:
        if "services" in item.keywords:
            item.add_marker(skip)
