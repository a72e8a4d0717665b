"""The FAD and KAD table and plot on the report page in Chromium at 1280 and 390 px: shown, inside the card, no sideways page scroll."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.models import Clip
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring.models import ClipScore, Judge
from tests.browser import DESKTOP, PHONE
from tests.factories import StudyFactory, SystemFactory, UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = [pytest.mark.browser]

WIDTHS = {"desktop": DESKTOP, "phone": PHONE}
# The FAD plot's points, intervals and figures lie inside the plot, and the plot inside its card.
ESCAPES = """() => { const f = document.querySelector('#results-distribution figure.forest'), card = f.closest('.card').getBoundingClientRect(), box = f.getBoundingClientRect();
  const out = box.right > card.right + 0.5 || box.left < card.left - 0.5 ? ['plot leaves its card'] : [];
  for (const el of f.querySelectorAll('.forest-strip, .forest-value, circle, line')) { const r = el.getBoundingClientRect();
    if (r.width && (r.right > box.right + 6 || r.left < box.left - 6)) out.push(`${el.tagName}.${el.getAttribute('class')} outside the plot`); }
  return out; }"""


def _study_with_cached_embeddings(name: str, *, conditions: int = 8, dims: int = 4):
    """Clips of three systems and references, with embeddings in the clip cache as a CLAP judge leaves them (the page reads only those)."""
    rng = np.random.default_rng(0)
    study = StudyFactory(name=name)
    systems = [SystemFactory(name=n) for n in ("aurora-long-system-name", "clipper", "hiss")]
    judge = Judge.objects.create(key="clap-page", kind=Judge.Kind.CLAP, weights="not/loaded-here")
    cached = []
    t = np.arange(8000) / 8000
    for i in range(conditions):
        wave = lambda k: (0.2 * np.sin(2 * np.pi * (200 + 40 * i + 5 * k) * t)).astype(np.float32)  # noqa: E731
        reference, _ = clip_ingest_array(audio=wave(0), sample_rate=8000, kind=Clip.Kind.REFERENCE, fmt="WAV")
        condition, _ = condition_get_or_create(prompt=f"piano {i}", reference=reference)
        clips = [clip_ingest_array(audio=wave(k + 1), sample_rate=8000, system=s, fmt="WAV")[0] for k, s in enumerate(systems)]
        pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1])
        pair_get_or_create(study=study, condition=condition, clip_a=clips[1], clip_b=clips[2])
        for shift, clip in zip((0.0, 0.2, 0.5, 1.5), [reference, *clips]):
            cached.append(ClipScore(judge=judge, judge_version="1.2.float32", clip_sha256=clip.sha256, context_key="", scores={"embedding": list(rng.standard_normal(dims) + shift)}))
    ClipScore.objects.bulk_create(cached)
    return study


class DistributionBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "distribution-shots-"

    def setUp(self):
        self.errors: list[str] = []

    @pytest.mark.engine
    def test_fad_and_kad_show_at_1280_and_390_px(self):
        study = _study_with_cached_embeddings("fad-page")
        study.collaborators.add(UserFactory(username="reader", roles=["researcher"]))
        for name, options in WIDTHS.items():
            context, page = self.open_as("reader", "/scoring/reports/", **options)
            page.goto(f"{self.live_server_url}/scoring/studies/{study.name}/report/?bootstrap=100", timeout=180_000)
            page.wait_for_selector("#results-distribution", timeout=90_000)
            self.assertEqual(page.locator("#distribution-clap-page tbody tr").count(), 3)
            self.assertEqual(page.locator("#forest-fad-clap-page circle.forest-point").count(), 3)
            self.assertGreater(page.locator("#forest-fad-clap-page line.forest-interval").count(), 0)
            self.assertIn("hiss", page.locator("#distribution-clap-page").inner_text())
            self.assertEqual(page.evaluate(ESCAPES), [])
            self.assertEqual(self.overflow(page), 0, f"the report scrolls sideways at {name}")
            page.locator("#results-distribution").screenshot(path=str(self.shots / f"distribution-{name}.png"))
            context.close()
        self.assertEqual(self.errors, [])
