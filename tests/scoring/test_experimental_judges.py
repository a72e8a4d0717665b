"""A judge no test can exercise here (audiobox-aesthetics) is listed as experimental, never silently."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from scoring.judges import JudgeConfig, adapter_for
from scoring.models import Judge
from tests.factories import UserFactory


@pytest.fixture
def judges(db):
    Judge.objects.create(key="aes", kind=Judge.Kind.AESTHETICS, weights="/nowhere/aes", queue=Judge.Queue.GPU)
    Judge.objects.create(key="sig", kind=Judge.Kind.SIGNAL)


def test_only_the_aesthetics_adapter_is_experimental():
    kinds = {kind: adapter_for(JudgeConfig(key=kind, kind=kind)).experimental for kind in Judge.Kind.values}
    assert kinds.pop(Judge.Kind.AESTHETICS) is True
    assert not any(kinds.values()), kinds


def test_judges_command_marks_experimental_judges(judges):
    out = StringIO()
    call_command("judges", stdout=out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines()}
    assert "[experimental: untested here] UNAVAILABLE:" in lines["aes"]
    assert "experimental" not in lines["sig"] and lines["sig"].rstrip().endswith("available")
    as_json = StringIO()
    call_command("judges", "--json", stdout=as_json)
    assert {row["key"]: row["experimental"] for row in json.loads(as_json.getvalue())} == {"aes": True, "sig": False}


def test_judges_page_marks_experimental_judges(judges, client):
    client.force_login(UserFactory(username="judges-res", roles=["researcher"]))
    page = client.get("/scoring/judges/").content.decode()
    rows = dict(re.findall(r'<tr data-judge="([^"]+)">(.*?)</tr>', page, flags=re.S))
    assert ">experimental</span>" in rows["aes"]
    assert "experimental" not in rows["sig"]
