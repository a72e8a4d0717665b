"""A study that looks like real use, for the report pages in a browser (at full width and at 390 px)."""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations

import numpy as np

from annotation.demo import DEMO_SYSTEMS
from annotation.models import Judgment, Pair, System
from scoring.models import Judge, ScoringRun, Verdict
from scoring.services import external_results_import
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, PairFactory, StudyFactory
from tests.fixtures import TUNEJURY

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
