"""Known-truth studies for the reward model, in memory (no database, no audio).

Clips are points x in R^4 (quadratic) or R^8 (bright_dark), standard normal, drawn per study seed; each condition has a prompt;
each vote follows a Bradley–Terry coin on the hidden utilities, P(A) = sigmoid(SCALE (u_A - u_B)).
Condition vectors are built as the feature judge builds them with hashed text
(scoring.reward.features.condition_features: hashed prompt, lyrics, flags, prompt attributes).

- "quadratic": musicality = -(x0^2 + x1^2) (nonlinear: a middle clip is best), alignment =
  x2 - 0.5 x3 (linear). A linear model cannot order the first; any decent one orders the second.
- "bright_dark": the prompt asks for a bright piece or a dark one (three words each); alignment
  is +x0 under a bright prompt and -x0 under a dark one, musicality = x1. A model that does not
  read the prompt cannot beat a coin on alignment.

`measured(...)` trains and measures one study over several split seeds (condition splits) and
returns, per seed and dimension, each predictor's accuracy and the paired difference of the
network to a baseline, each with its 95% interval resampling test conditions.
"""

from __future__ import annotations

import itertools

import numpy as np

from scoring.evaluation import VOTE
from scoring.reward.data import split_rows, votes_from_rows
from scoring.reward.features import PROMPT_ATTRIBUTES, PROMPT_DIM, condition_features, hashed_text
from scoring.reward.measure import measure_split
from scoring.reward.model import FeatureTable, TrainConfig

SCALE = 3.0
DIMS = {"quadratic": 4, "bright_dark": 8}
# Words of no meaning to the truth (and outside the prompt attributes' lists), a few per prompt as
# real prompts carry them: the hashed prompt embedding spreads over many slots.
FILLER = ("jazz", "rock", "folk", "pop", "lofi", "indie", "funk", "soul", "trance", "house", "swing", "blues", "track", "tune",
          "melody", "song", "groove", "theme", "motif", "anthem", "waltz", "march", "hymn", "lullaby")
BRIGHT = ("bright", "shimmering", "airy")
DARK = ("dark", "murky", "deep")
KINDS = ("quadratic", "bright_dark")


def _truth(kind: str, x: np.ndarray, bright: bool) -> tuple[float, float]:
    """(alignment, musicality) utilities of a clip under a condition."""
    if kind == "quadratic":
        return x[2] - 0.5 * x[3], -(x[0] ** 2 + x[1] ** 2)
    return (x[0] if bright else -x[0]), x[1]


def study(kind: str, *, conditions: int = 40, clips: int = 5, voters: int = 2, seed: int = 0):
    """(table, votes, rows) of a known-truth study; every two clips of a condition are a pair."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((conditions * clips, DIMS[kind]))
    prompts, rows, pair = [], [], 0
    for c in range(conditions):
        bright = c % 2 == 0
        filler = " ".join(rng.choice(FILLER, 4, replace=False)) if kind == "bright_dark" else "instrumental"
        prompts.append(f"a {(BRIGHT if bright else DARK)[(c // 2) % 3]} {filler} piece")
        for a, b in itertools.combinations(range(clips), 2):
            pair += 1
            ia, ib = c * clips + a, c * clips + b
            ua, ub = _truth(kind, points[ia], bright), _truth(kind, points[ib], bright)
            for v in range(voters):
                labels = ["model_a" if rng.random() < 1.0 / (1.0 + np.exp(-SCALE * (ua[j] - ub[j]))) else "model_b" for j in range(2)]
                rows.append({"pair_id": pair, "condition": f"c{c}", "prompt": prompts[-1], "clip_a": f"k{ia}", "clip_b": f"k{ib}",
                             "annotator": f"p{v}", "label_alignment": labels[0], "label_musicality": labels[1]})  # fmt: skip
    text = np.stack([hashed_text(p, PROMPT_DIM) for p in prompts])
    table = FeatureTable(clips=points, conditions=condition_features(text, [""] * conditions, prompts, [True] * conditions), reference=-np.ones(conditions))
    votes = votes_from_rows(rows, clip_index={f"k{i}": i for i in range(len(points))}, condition_index={f"c{c}": c for c in range(conditions)})
    return table, votes, rows


def measured(kind: str, *, split_seeds=range(5), config: TrainConfig | None = None, rounds: int = 1000, **sizes) -> list[dict]:
    """Per split seed: {dim: {"accuracy": {predictor: (value, ci)}, "minus": {baseline: (difference, ci)}}}."""
    table, votes, rows = study(kind, **sizes)
    config = config or TrainConfig(epochs=200, patience=20, crossed=len(PROMPT_ATTRIBUTES))
    out = []
    for seed in split_seeds:
        split = split_rows(rows, mode="condition", seed=seed)
        figures = measure_split(table, votes, rows, split, config=config, seed=0, judge_scores=None, feature_kind="truth", rounds=rounds).figures
        per_dim = {}
        for dim in ("alignment", "musicality"):
            test = figures["test"][VOTE][dim]
            diffs = figures["differences"][dim]
            per_dim[dim] = {
                "accuracy": {name: (test[name]["accuracy"], test[name]["ci"]) for name in ("network", "registered", "logistic", "logistic_interactions")},
                "minus": {name: (diffs[name]["difference"], diffs[name]["ci"]) for name in ("logistic", "logistic_interactions")},
                "clusters": test["network"]["interval"]["clusters"],
            }
        out.append({"split_seed": seed, "picks": figures["picks"], **per_dim})
    return out
