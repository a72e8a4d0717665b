"""The report page in a real browser, with live refresh over a websocket.

Channels' live server (Daphne in a child process) is used instead of pytest-django's
`live_server`, which speaks only WSGI: the page's websocket needs ASGI. A vote is
submitted over HTTP to that server, so the judgment listener, the in-memory
channel layer and the consumer all run in the server process, as in production.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set (docs/screenshots keeps
the ones in the docs), otherwise to a temporary folder.
"""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations

import numpy as np
import pytest
from django.utils import timezone

from annotation.demo import DEMO_SYSTEMS
from annotation.models import Judgment, Pair, System
from scoring.models import Judge, ScoringRun, Verdict
from scoring.services import external_results_import
from tests.factories import AnnotatorFactory, AssignmentFactory, ClipFactory, ConditionFactory, PairFactory, StudyFactory, UserFactory
from tests.fixtures import TUNEJURY, needs_tunejury
from tests.listening import listen
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = [pytest.mark.browser, needs_tunejury]

RANKS = {s.name: (s.alignment_rank, s.musicality_rank) for s in DEMO_SYSTEMS}

PROMPTS = [
    "Upbeat synth-pop at 120 BPM with a bright lead and punchy drums",
    "Slow melancholic piano ballad in A minor, intimate late-night mood",
    "Lo-fi hip hop beat with dusty drums and a mellow Rhodes",
    "Epic orchestral trailer cue with big brass and taiko drums",
]
LYRICS = "[Verse]\nCity lights are calling me home\n[Chorus]\nHold on, hold on"
RATIONALES = [
    "{w} drifts off the beat around 0:12; {b} keeps steady time.",
    "{b} follows the requested tempo; {w} is at half speed.",
    "The vocal in {w} is clipped in the chorus.",
    "{b} has the brass the prompt asks for, {w} has none.",
    "Hiss all over {w}; {b} is clean.",
    "",
    "",
]


def showcase_study(name: str = "showcase"):
    """A study that looks like real use: 96 pairs over four modalities, 7 annotators (two of them careless), two judges."""
    rng = np.random.default_rng(11)
    study = StudyFactory(name=name, title="Showcase: six demo systems", min_listen_seconds=1.0, overlap_target=5)
    systems = {n: System.objects.create(name=n) for n in RANKS}
    reference = ClipFactory(kind="reference", system=None)
    pairs = []
    for c in range(16):
        modality = c % 4
        condition = ConditionFactory(
            prompt=f"{PROMPTS[c % len(PROMPTS)]} (take {c})",
            lyrics=LYRICS if modality in (1, 3) else "",
            reference=reference if modality in (2, 3) else None,
        )
        clips = {n: ClipFactory(system=s) for n, s in systems.items()}
        combos = list(combinations(RANKS, 2))
        for index in rng.choice(len(combos), size=6, replace=False):
            first, second = combos[index]
            if rng.random() < 0.5:
                first, second = second, first
            pair = PairFactory(study=study, condition=condition, clip_a=clips[first], clip_b=clips[second], overlap=5)
            gap = {d: abs(RANKS[first][i] - RANKS[second][i]) for i, d in enumerate(("alignment", "musicality"))}
            better = {d: (clips[first] if RANKS[first][i] < RANKS[second][i] else clips[second]).pk for i, d in enumerate(("alignment", "musicality"))}
            if min(gap.values()) >= 2 and len(pairs) % 3 == 0:  # gold pairs have an obvious answer
                pair.kind = Pair.Kind.GOLD
                pair.expected_alignment_id, pair.expected_musicality_id = better["alignment"], better["musicality"]
                pair.save()
            pairs.append((pair, gap, better))
    names = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove"]
    annotators = [AnnotatorFactory(username=n) for n in names]
    judgments = []
    for pair, gap, better in pairs:
        ids = (pair.clip_a_id, pair.clip_b_id)
        voters = [a for a in annotators if rng.random() < 0.7]
        for annotator in voters:
            shown_a = ids[int(rng.integers(2))]
            choice, conf = {}, {}
            for dim in ("alignment", "musicality"):
                worse = ids[1] if better[dim] == ids[0] else ids[0]
                if annotator.username == "fjord":  # clicks at random
                    choice[dim], conf[dim] = ids[int(rng.integers(2))], float(rng.choice([2, 3, 4, 5]))
                elif annotator.username == "grove":  # always the left-hand clip, always 3
                    choice[dim], conf[dim] = shown_a, 3.0
                else:
                    # Bigger quality gaps are easier: more accurate and more confident.
                    right = rng.random() < 0.6 + 0.07 * gap[dim]
                    choice[dim] = better[dim] if right else worse
                    conf[dim] = float(np.clip(np.round((1.2 + 0.6 * gap[dim] + rng.normal(0, 0.7) - (0 if right else 0.8)) * 2) / 2, 1, 5))
            winner = "A" if choice["musicality"] == shown_a else "B"
            template = RATIONALES[int(rng.integers(len(RATIONALES)))]
            rationale = template.format(b=winner, w="B" if winner == "A" else "A") if annotator.username not in ("fjord", "grove") else ""
            heard = float(rng.uniform(8, 20)) if annotator.username != "fjord" else float(rng.uniform(1, 3))
            judgments.append(
                Judgment(
                    annotator=annotator,
                    pair=pair,
                    a_clip_id=shown_a,
                    alignment_choice_id=choice["alignment"],
                    alignment_confidence=Decimal(str(conf["alignment"])),
                    musicality_choice_id=choice["musicality"],
                    musicality_confidence=Decimal(str(conf["musicality"])),
                    rationale=rationale,
                    time_on_page_ms=int(heard * 2300 + rng.integers(3000, 15000)),
                    listening_log={"A": {"plays": 1, "seconds": heard}, "B": {"plays": 1, "seconds": heard * 0.9}, "switches": 2},
                    source=Judgment.Source.IMPORT,
                )
            )
    Judgment.objects.bulk_create(judgments)
    for key, kind, base, slope, discard in (("signal-quality", Judge.Kind.SIGNAL, 0.5, 0.08, 0.0), ("audio-llm-pairwise", Judge.Kind.LLM_PAIRWISE, 0.55, 0.05, 0.12)):
        judge = Judge.objects.create(key=key, kind=kind)
        run = ScoringRun.objects.create(judge=judge, study=study, label=f"{key} v1", state=ScoringRun.State.DONE, total=len(pairs), done=len(pairs))
        verdicts = []
        for pair, gap, better in pairs:
            if rng.random() < discard:
                verdicts.append(Verdict(run=run, pair=pair, status=Verdict.Status.DISCARDED, rationale="A/B and B/A answers disagree"))
                continue
            picks = {}
            for dim in ("alignment", "musicality"):
                worse = pair.clip_b_id if better[dim] == pair.clip_a_id else pair.clip_a_id
                picks[dim] = better[dim] if rng.random() < base + slope * gap[dim] else worse
            verdicts.append(
                Verdict(run=run, pair=pair, alignment_choice_id=picks["alignment"], musicality_choice_id=picks["musicality"], rationale="Clip 1 has the cleaner mix." if kind == Judge.Kind.LLM_PAIRWISE else "")
            )
        Verdict.objects.bulk_create(verdicts)
    external_results_import(path=TUNEJURY, name="muqeval-a1 (TuneJury)", judge_name="MuQ-Eval-A1")
    return study, [p for p, _, _ in pairs], annotators


class _ReportBrowser(BrowserLiveServerTestCase):
    """A server process of its own per test class: with SQLite, a second test in the same forked
    server process could read the database as it was before its own rows (seen after the
    sign-in tests of tests/reliability ran first), so each test gets a fresh process."""

    shots_prefix = "report-shots-"

    def setUp(self):
        self.study, self.pairs, self.annotators = showcase_study()
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        # The owner: excluding an annotator is a change to the study, for its owner, collaborators and admins.
        self.study.owner = self.researcher
        self.study.save(update_fields=["owner"])
        self.errors: list[str] = []

    def open_as(self, username: str, path: str):
        # Playwright's wait_for_function runs its predicate through eval, which the pages' CSP forbids (as it should);
        # tests/reliability/test_csp_browser.py loads these pages without the bypass and checks nothing is refused.
        context = self.browser.new_context(viewport={"width": 1360, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.goto(f"{self.live_server_url}/accounts/login/?next={path}")
        page.fill("#id_username", username)
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url(f"**{path}*")
        assert "/accounts/login/" not in page.url, page.locator("main").inner_text()
        return context, page

    def votes_shown(self, page) -> int:
        return int(page.locator(".report-facts div:nth-child(3) dd").inner_text())



class ReportPlotsBrowserTests(_ReportBrowser):
    def test_report_page_draws_plots_and_refreshes_when_a_vote_arrives(self):
        path = f"/scoring/studies/{self.study.name}/report/"
        context, page = self.open_as("researcher", path)
        # The report (bootstrap intervals included) is computed in this first request; on a loaded
        # machine that alone can pass Playwright's 30 s default.
        page.wait_for_selector("[data-plot='agreement-rate'] svg", timeout=90_000)
        for plot in ("agreement-rate", "agreement-alpha", "confidence-histogram", "annotator-bias", "judge-confidence-alignment", "judge-confidence-musicality"):
            self.assertGreater(page.locator(f"[data-plot='{plot}'] svg rect, [data-plot='{plot}'] svg circle").count(), 0, plot)
        # The careless annotators stand out in red in the bias plot and carry flags in the table.
        flagged = page.locator("table.annotators tr.flagged th").all_inner_texts()
        self.assertTrue({"p-fjord", "p-grove"} <= {t.split()[0] for t in flagged}, flagged)
        page.screenshot(path=str(self.shots / "report-overview.png"))
        page.locator("#agreement").screenshot(path=str(self.shots / "report-agreement.png"))
        page.locator("#annotators").screenshot(path=str(self.shots / "report-annotators.png"))
        page.locator("#judges").screenshot(path=str(self.shots / "report-judges.png"))
        page.locator("#confidence").screenshot(path=str(self.shots / "report-confidence.png"))
        page.locator("#bias").screenshot(path=str(self.shots / "report-bias.png"))
        page.locator("#triage .triage-item").first.screenshot(path=str(self.shots / "report-triage.png"))
        self.assertEqual(page.locator("#triage audio").first.get_attribute("preload"), "none")

        page.wait_for_function("document.getElementById('live-status').textContent.startsWith('live')", timeout=10000)
        before = self.votes_shown(page)
        # An annotator votes through the API of the same server; the page must follow without a reload.
        annotator = AnnotatorFactory(username="late")
        free = next(p for p in self.pairs if not p.judgments.filter(annotator=annotator).exists())
        assignment = AssignmentFactory(annotator=annotator, pair=free, served_at=timezone.now() - timezone.timedelta(minutes=1))
        listen(assignment, seconds=2.0)
        other, annotator_page = self.open_as("late", "/")
        token = next(c["value"] for c in other.cookies() if c["name"] == "csrftoken")
        response = annotator_page.request.post(
            f"{self.live_server_url}/api/assignments/{assignment.pk}/judgment/",
            data={
                "idempotency_key": "browser-live-1",
                "alignment": "A",
                "alignment_confidence": "4.0",
                "musicality": "A",
                "musicality_confidence": "4.0",
                "rationale": "A is in tune",
                "listening_log": {"A": {"plays": 1, "seconds": 2}, "B": {"plays": 1, "seconds": 2}, "switches": 1},
            },
            headers={"X-CSRFToken": token, "Referer": self.live_server_url + "/"},
        )
        self.assertEqual(response.status, 201, response.text())
        # The push comes at once; the wait is the report computed afresh, seconds on a busy machine (crowd aggregation).
        page.wait_for_function(f"Number(document.querySelector('.report-facts div:nth-child(3) dd').textContent) === {before + 1}", timeout=30000)
        self.assertTrue(page.locator("[data-plot='agreement-rate'] svg").count() == 1)  # plots redrawn after the swap
        other.close()
        context.close()
        self.assertEqual(self.errors, [])



class ReportExclusionBrowserTests(_ReportBrowser):
    def test_excluding_an_annotator_from_the_page(self):
        path = f"/scoring/studies/{self.study.name}/report/"
        context, page = self.open_as("researcher", path)
        row = page.locator("table.annotators tr", has=page.locator("th", has_text="p-fjord"))
        row.locator("input[name=reason]").fill("random answers on gold pairs")
        row.locator("button", has_text="Exclude").click()
        page.wait_for_selector("text=p-fjord is now left out of analysis and export.")
        row = page.locator("table.annotators tr", has=page.locator("th", has_text="p-fjord"))
        self.assertIn("excluded", row.inner_text())
        self.assertEqual(row.locator("button", has_text="Include again").count(), 1)
        page.locator("#annotators").screenshot(path=str(self.shots / "report-annotators-excluded.png"))
        context.close()
        self.assertEqual(self.errors, [])
