"""Simulated raters with a known truth per clip, a bias per rater and noise, as a ratings frame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoring.ratings import RATING_COLUMNS


def simulate(*, seed: int, clips: int = 40, systems: int = 4, raters: int = 60, per_clip: int = 8, bias_sd: float = 5.0, noise_sd: float = 10.0, dimension: str = "musicality", acr: bool = False):
    """(frame, truth per clip, truth per system). Ratings are truth + rater bias + noise (acr: rounded and clipped to 1-5)."""
    rng = np.random.default_rng(seed)
    system_quality = np.linspace(70, 30, systems) if not acr else np.linspace(4.2, 1.8, systems)
    clip_system = np.arange(clips) % systems
    spread = 8.0 if not acr else 0.4
    truth = system_quality[clip_system] + rng.normal(0, spread, clips)
    bias = rng.normal(0, bias_sd, raters)
    rows = []
    submission = 0
    for c in range(clips):
        for r in rng.choice(raters, per_clip, replace=False):
            value = truth[c] + bias[r] + rng.normal(0, noise_sd)
            if acr:
                value = float(np.clip(np.rint(value), 1, 5))
            submission += 1
            rows.append((submission, int(r), c, c, f"sys-{clip_system[c]}", dimension, value, "regular", "test", np.nan, np.nan))
    frame = pd.DataFrame(rows, columns=RATING_COLUMNS)
    frame.attrs["bias"] = dict(enumerate(bias))
    system_truth = {f"sys-{s}": float(truth[clip_system == s].mean()) for s in range(systems)}
    return frame, dict(enumerate(truth)), system_truth
