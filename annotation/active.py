"""The active-selection rule, in plain Python so simulations use the engine's own rule.

A study with an active selection (uncertainty or disagreement) serves a regular draw in the
active order only when that draw is picked for it: each annotator's draws are picked with
probability `active_share`, seeded by the annotator's study seed and the draw number, so the
choice is reproducible and independent of what other annotators do. The other draws follow the
engine's random order, which keeps a uniform sample of the pairs in the votes (each judgment
records which way its pair came, so analyses can use that sample alone).
"""

from __future__ import annotations

import random

RANDOM, UNCERTAINTY, DISAGREEMENT = "random", "uncertainty", "disagreement"
ACTIVE_MODES = (UNCERTAINTY, DISAGREEMENT)


def active_draw(*, seed: int, draw: int, share: float) -> bool:
    """Whether this draw (the annotator's n-th) is served in the active order."""
    if share <= 0:
        return False
    return random.Random(f"{seed}:active:{draw}").random() < share


def draw_mode(*, selection: str, seed: int, draw: int, share: float) -> str:
    """The order a regular draw follows: the study's active mode for picked draws, else RANDOM."""
    if selection in ACTIVE_MODES and active_draw(seed=seed, draw=draw, share=share):
        return selection
    return RANDOM


def active_order(priorities: dict, order_keys: dict) -> list:
    """Pair ids best first: highest priority, then the pair's random order key (as the engine's query sorts)."""
    return sorted(priorities, key=lambda pid: (-priorities[pid], order_keys.get(pid, 0), pid))
