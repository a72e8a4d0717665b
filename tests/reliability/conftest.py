"""Fixtures shared by the reliability tests."""

from __future__ import annotations

import copy
import uuid

import pytest


@pytest.fixture
def own_cache(settings):
    """A cache key prefix of this test's own: a live server's throttles and audio notes start empty and leave nothing behind."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"
    settings.CACHES = caches
