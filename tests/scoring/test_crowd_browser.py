"""The report's aggregation section in Chromium: a flipping annotator stands out, and the calibration table fits its card."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.browser
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.mark.engine
@pytest.mark.timeout(240)
def test_aggregation_section_shows_reliability_and_calibration(live_server, browser, transactional_db, tmp_path):
    rng = np.random.default_rng(3)
    study = StudyFactory(name="crowd-report", title="Crowd report")
    people = [AnnotatorFactory(username=f"rater{i}") for i in range(5)]
    accuracy = [0.9, 0.85, 0.8, 0.5, 0.1]  # the fourth answers at random, the fifth flips
    for _ in range(24):
        pair = PairFactory(study=study)
        truth_a = rng.random() < 0.5
        for person, acc in zip(people, accuracy):
            right = rng.random() < acc
            clip = pair.clip_a if truth_a == right else pair.clip_b
            conf = Decimal(str(int(rng.integers(3, 6)) if acc > 0.7 else int(rng.integers(1, 6))))
            JudgmentFactory(pair=pair, annotator=person, a_clip=pair.clip_a, alignment_choice=clip, musicality_choice=clip, alignment_confidence=conf, musicality_confidence=conf)
    study.collaborators.add(UserFactory(username="lead", roles=["researcher"]))  # the study rule: owner, collaborators, admins
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", "lead")
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.goto(f"{live_server.url}/scoring/studies/{study.name}/report/", timeout=120_000)
        section = page.locator("#aggregation")
        section.wait_for()
        text = section.inner_text()
        assert "Dawid–Skene" in text and "MACE" in text
        first_row = section.locator("table.calibration tbody tr").first.inner_text()
        # Sorted by reliability: the flipper comes first, well below a coin.
        assert first_row.startswith(f"p-{people[4].username}")
        assert section.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1") or section.locator(".table-scroll").count()
        folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
        # The report swaps its body in place when it refreshes (live push or polling): a shot taken across a swap is
        # taken again of the fresh section.
        for attempt in range(3):
            try:
                section.screenshot(path=str(folder / "report-aggregation.png"))
                break
            except PlaywrightError:
                if attempt == 2:
                    raise
    finally:
        context.close()
