"""What the suite needs from the machine and the checkout, and what happens when it is missing.

On a developer's machine a test whose prerequisite (Chromium, a fixture file) is missing skips
with the reason. Under CI (CI=true, set by .ci/run) the same test fails: a green CI run must
mean the whole suite ran.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

TRUTHY = {"1", "true", "yes", "on"}


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in TRUTHY


def missing(what: str, *, fix: str) -> NoReturn:
    """Skip locally; fail under CI. `what` says what is missing, `fix` how to provide it."""
    if under_ci():
        pytest.fail(f"{what}. {fix} (CI=true: a missing prerequisite is a failure, not a skip.)", pytrace=False)
    pytest.skip(f"{what}. {fix}")
