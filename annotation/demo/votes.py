"""Seeded demo votes: a small, labelled set of answers from the seeded voters (seed.py), so a fresh demo's report
has human labels for its judges to be measured against.

No one listened to anything: each vote follows the systems' true ranks (catalogue.py) with some
deliberate noise, drawn from a fixed seed, so every demo database gets the same answers. Each vote is
marked three times: its source is "seeded" (Judgment.Source.SEEDED: exports and reports leave it out
unless asked for), its rationale starts with DEMO_VOTE_LABEL and its idempotency key with "demo-vote:".
"""

from __future__ import annotations

import random
from decimal import Decimal

from ..models import Judgment, Pair, Study
from .catalogue import DEMO_SYSTEMS

DEMO_VOTE_SEED = 20250
DEMO_VOTE_LABEL = "Demo vote (seeded; no one listened)"
DEMO_VOTE_KEY = "demo-vote:"
# Pairs voted per condition, each by all three seeded voters: agreement can be measured, a
# pair's majority is never tied, and the report's strengths come out in the designed order on both dimensions.
PAIRS_PER_CONDITION = 4
VOTERS_PER_PAIR = 3
# How often the better-ranked system wins, by rank gap: humans are noisy, more so on close calls.
_WIN_CHANCE = {1: 0.75, 2: 0.85, 3: 0.9}
_RANKS = {s.name: {"alignment": s.alignment_rank, "musicality": s.musicality_rank} for s in DEMO_SYSTEMS}
_WHY = {"alignment": "follows the request more closely", "musicality": "sounds cleaner and steadier"}


def _half_step(value: float) -> Decimal:
    return Decimal(str(min(5.0, max(1.0, round(value * 2) / 2)))).quantize(Decimal("0.1"))


def _answer(rng: random.Random, pair: Pair, dimension: str):
    """The preferred clip and a confidence on one dimension."""
    rank_a, rank_b = (_RANKS[clip.system.name][dimension] for clip in (pair.clip_a, pair.clip_b))
    gap = abs(rank_a - rank_b)
    better, worse = (pair.clip_a, pair.clip_b) if rank_a < rank_b else (pair.clip_b, pair.clip_a)
    right = rng.random() < _WIN_CHANCE.get(gap, 0.95)
    confidence = _half_step(2.0 + 0.5 * gap + rng.choice((-0.5, 0.0, 0.5)) - (0.0 if right else 1.0))
    return (better if right else worse), confidence


def demo_votes_seed(*, study: Study, annotators: list) -> int:
    """Add the seeded votes (regular pairs only) unless an annotator has already answered that pair; returns how many were added."""
    rng = random.Random(DEMO_VOTE_SEED)
    pairs = Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).select_related("condition", "clip_a__system", "clip_b__system")
    by_condition: dict[str, list[Pair]] = {}
    # Ordered by content, not by id, so the same pairs are drawn in any database.
    for pair in sorted(pairs, key=lambda p: (p.condition.external_id, p.clip_a.system.name, p.clip_b.system.name)):
        by_condition.setdefault(pair.condition.external_id, []).append(pair)
    answered = set(Judgment.objects.filter(pair__study=study, annotator__in=annotators).values_list("annotator_id", "pair_id"))
    new = []
    turn = 0
    for key in sorted(by_condition):
        for pair in rng.sample(by_condition[key], min(PAIRS_PER_CONDITION, len(by_condition[key]))):
            voters = [annotators[(turn + k) % len(annotators)] for k in range(VOTERS_PER_PAIR)]
            turn += 1
            for user in voters:
                # Drawn even when the vote exists, so a re-run after one vote was made by hand keeps the others identical.
                shown_a = rng.choice((pair.clip_a, pair.clip_b))
                alignment, alignment_confidence = _answer(rng, pair, "alignment")
                musicality, musicality_confidence = _answer(rng, pair, "musicality")
                if (user.pk, pair.pk) in answered:
                    continue
                side = lambda clip: "A" if clip == shown_a else "B"  # noqa: E731
                new.append(
                    Judgment(
                        annotator=user,
                        pair=pair,
                        a_clip=shown_a,
                        alignment_choice=alignment,
                        alignment_confidence=alignment_confidence,
                        musicality_choice=musicality,
                        musicality_confidence=musicality_confidence,
                        rationale=f"{DEMO_VOTE_LABEL}: {side(alignment)} {_WHY['alignment']}; {side(musicality)} {_WHY['musicality']}.",
                        idempotency_key=f"{DEMO_VOTE_KEY}{user.username}:{pair.condition.external_id}:{pair.clip_key}"[:100],
                        source=Judgment.Source.SEEDED,
                    )
                )
    Judgment.objects.bulk_create(new)
    return len(new)


def demo_rank_votes_seed(*, study: Study, annotators: list, seed: int = DEMO_VOTE_SEED) -> int:
    """Seeded votes on every regular pair of any study whose clips come from the demo systems, each annotator once:
    the better-ranked system wins as often as in `demo_votes_seed`, clips of one system are a coin toss.
    Pairs with a clip of another system are left alone. Returns how many were added."""
    rng = random.Random(seed)
    pairs = Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).select_related("clip_a__system", "clip_b__system").order_by("clip_key", "condition_id")
    answered = set(Judgment.objects.filter(pair__study=study, annotator__in=annotators).values_list("annotator_id", "pair_id"))
    new = []
    for pair in pairs:
        names = [clip.system.name if clip.system_id else None for clip in (pair.clip_a, pair.clip_b)]
        if any(name not in _RANKS for name in names):
            continue
        for user in annotators:
            shown_a = rng.choice((pair.clip_a, pair.clip_b))
            choices = {}
            for dimension in ("alignment", "musicality"):
                if _RANKS[names[0]][dimension] == _RANKS[names[1]][dimension]:
                    choices[dimension] = (rng.choice((pair.clip_a, pair.clip_b)), Decimal("2.0"))
                else:
                    choices[dimension] = _answer(rng, pair, dimension)
            if (user.pk, pair.pk) in answered:
                continue
            new.append(
                Judgment(
                    annotator=user,
                    pair=pair,
                    a_clip=shown_a,
                    alignment_choice=choices["alignment"][0],
                    alignment_confidence=choices["alignment"][1],
                    musicality_choice=choices["musicality"][0],
                    musicality_confidence=choices["musicality"][1],
                    rationale=f"{DEMO_VOTE_LABEL}.",
                    idempotency_key=f"{DEMO_VOTE_KEY}{user.username}:{study.pk}:{pair.pk}"[:100],
                    source=Judgment.Source.SEEDED,
                )
            )
    Judgment.objects.bulk_create(new)
    return len(new)
