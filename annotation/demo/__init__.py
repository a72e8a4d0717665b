"""Demo content: procedural music "systems" whose quality is known by construction.

A newcomer needs realistic pairs to annotate, and tests of reports and judges
need a ranking that is true by design rather than by someone's opinion. Six
systems render the same kind of music from a prompt (melody, chords, bass,
drums, and a sung vowel line when lyrics are given); five of them carry
deliberate faults. Each degraded system has at least one fault a signal-level
judge can measure (clipping, noise, silence, loudness, DC offset), so a
deterministic judge must prefer `aurora` in every pair that contains it.

Everything but the seeding is numpy and scipy; rendering 6 s takes a few tens of milliseconds.

- catalogue.py: the systems (with their true ranks and flaws) and the conditions
- compose.py: reading the prompt (key, tempo, instruments) and writing a score
- synth.py: playing the score, each system's faults, `render` and `render_reference`
- mastering.py: loudness, true peak, limiter
- seed.py: the demo study, its pairs and the demo accounts in the database
- votes.py: the seeded, labelled votes (made by accounts of their own, not the demo annotators) (so reports have human labels at once)
"""

from .catalogue import CLEAN_SYSTEM, DEMO_CONDITIONS, DEMO_SYSTEMS, ORGANISATION, SYSTEM_NAMES, DemoCondition, DemoSystem
from .compose import Style, style_for
from .mastering import loudness_lufs, master, true_peak
from .seed import ANNOTATORS, DEMO_STUDY, SEEDED_VOTERS, USERS, seed_demo
from .synth import FAULTS, Faults, render, render_reference
from .votes import DEMO_VOTE_KEY, DEMO_VOTE_LABEL

__all__ = [
    "ANNOTATORS",
    "CLEAN_SYSTEM",
    "DEMO_CONDITIONS",
    "DEMO_STUDY",
    "DEMO_SYSTEMS",
    "DEMO_VOTE_KEY",
    "DEMO_VOTE_LABEL",
    "FAULTS",
    "ORGANISATION",
    "SEEDED_VOTERS",
    "SYSTEM_NAMES",
    "USERS",
    "DemoCondition",
    "DemoSystem",
    "Faults",
    "Style",
    "loudness_lufs",
    "master",
    "render",
    "render_reference",
    "seed_demo",
    "style_for",
    "true_peak",
]
