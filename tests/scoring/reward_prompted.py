"""Prompt-dependent known-truth studies whose deciding words are in no built-in list (in memory, no audio).

The features were not designed for these: every deciding word is invented, so the prompt
attributes (scoring.reward.features.PROMPT_WORDS) are all zero and only the prompt's own text
(the hashed words and bigrams) can carry the condition. Clips are points x in R^8, standard
normal (x0 stands for a spectral centroid, x1 for a spectral flatness, x3 for a loudness);
votes are Bradley–Terry coins P(A) = sigmoid(SCALE (u_A - u_B)); each prompt also carries four
filler words drawn from a pool of real and made-up genre words, so the hashed prompt spreads
over many slots.

- "invented_word": a prompt says "zorblat" or "quintic"; alignment is x0 under "zorblat" and x1
  under "quintic" (the word picks which feature aligns); musicality = x2.
- "two_words": a prompt carries one word of each of two invented pairs, ("vell", "dorn") and
  ("ishka", "tamu"); alignment = s1 x0 + s2 x3 with s1 = +1 for "vell", -1 for "dorn" and s2 = +1
  for "ishka", -1 for "tamu" (two attributes, each turning a different feature; rank two);
  musicality = x2.
- "word_order": both words of the phrase occur in every prompt, "glass river" or "river glass";
  alignment is +x0 for the first order and -x0 for the second, so no bag of single words tells
  them apart (only the bigram does); musicality = x2.
- "blind": the same prompts as "invented_word" but the preference ignores them (alignment x0 -
  0.5 x1, musicality x2): a model that reads the prompt must not lose to one that does not.

`measured(...)` trains and measures one study over several split seeds (condition or prompt
splits) as tests/scoring/reward_truth.measured does.
"""

from __future__ import annotations

import itertools

import numpy as np

from scoring.evaluation import VOTE
from scoring.reward.data import split_rows, votes_from_rows
from scoring.reward.features import PROMPT_ATTRIBUTES, PROMPT_DIM, condition_features, hashed_text, prompt_attributes
from scoring.reward.measure import measure_split
from scoring.reward.model import FeatureTable, TrainConfig

SCALE = 3.0
DIM = 8
KINDS = ("invented_word", "two_words", "word_order", "blind")
FILLER = ("jazz", "rock", "folk", "lofi", "indie", "funk", "soul", "trance", "swing", "blues", "track", "tune", "melody", "song",
          "groove", "theme", "motif", "anthem", "waltz", "hymn", "plim", "varto", "skellig", "oru", "brannic", "mistle")  # fmt: skip
PREDICTORS = ("network", "registered", "logistic", "logistic_interactions", "prompt_lowrank")


def _condition(kind: str, c: int, rng, fillers: int = 4) -> tuple[str, callable]:
    """(prompt, truth): the prompt of condition c and its (alignment, musicality) utility of a clip."""
    filler = " ".join(rng.choice(FILLER, fillers, replace=False))
    if kind in ("invented_word", "blind"):
        word = ("zorblat", "quintic")[c % 2]
        prompt = f"a {word} {filler} piece"
        if kind == "blind":
            return prompt, lambda x: (x[0] - 0.5 * x[1], x[2])
        return prompt, (lambda x: (x[0], x[2])) if c % 2 == 0 else (lambda x: (x[1], x[2]))
    if kind == "two_words":
        first, second = ("vell", "dorn")[c % 2], ("ishka", "tamu")[(c // 2) % 2]
        s1, s2 = (1.0 if first == "vell" else -1.0), (1.0 if second == "ishka" else -1.0)
        words = filler.split()
        return f"{words[0]} {first} {' '.join(words[1:-1])} {second} {words[-1]}", lambda x: (s1 * x[0] + s2 * x[3], x[2])
    phrase, sign = (("glass river", 1.0), ("river glass", -1.0))[c % 2]
    return f"a {filler} piece of {phrase}", lambda x: (sign * x[0], x[2])


def study(kind: str, *, conditions: int = 48, clips: int = 4, voters: int = 2, seed: int = 0, features: int = DIM, fillers: int = 4):
    """(table, votes, rows) of one study; every two clips of a condition are a pair.

    `features` (at least 4) widens the clip vectors with features the truth ignores (the signal
    judge's vector has 19); `fillers` is the number of filler words a prompt carries.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((conditions * clips, max(4, features)))
    prompts, rows, pair = [], [], 0
    for c in range(conditions):
        prompt, truth = _condition(kind, c, rng, fillers)
        prompts.append(prompt)
        for a, b in itertools.combinations(range(clips), 2):
            pair += 1
            ia, ib = c * clips + a, c * clips + b
            ua, ub = truth(points[ia]), truth(points[ib])
            for v in range(voters):
                labels = ["model_a" if rng.random() < 1.0 / (1.0 + np.exp(-SCALE * (ua[j] - ub[j]))) else "model_b" for j in range(2)]
                rows.append({"pair_id": pair, "condition": f"c{c}", "prompt": prompt, "clip_a": f"k{ia}", "clip_b": f"k{ib}",
                             "annotator": f"p{v}", "label_alignment": labels[0], "label_musicality": labels[1]})  # fmt: skip
    # The study is only fair if the built-in word lists say nothing about it.
    assert not any(prompt_attributes(p).any() for p in prompts), "a deciding or filler word is in a built-in list"
    text = np.stack([hashed_text(p, PROMPT_DIM) for p in prompts])
    table = FeatureTable(clips=points, conditions=condition_features(text, [""] * conditions, prompts, [True] * conditions), reference=-np.ones(conditions))
    votes = votes_from_rows(rows, clip_index={f"k{i}": i for i in range(len(points))}, condition_index={f"c{c}": c for c in range(conditions)})
    return table, votes, rows


def measured(kind: str, *, split_seeds=range(5), mode: str = "condition", config: TrainConfig | None = None, rounds: int = 1000, seed: int = 0, **sizes) -> list[dict]:
    """Per split seed: {dim: {"accuracy": {predictor: (value, ci)}, "minus": {baseline: (difference, ci)}}, "picks", "prompt"}."""
    table, votes, rows = study(kind, seed=seed, **sizes)
    config = config or TrainConfig(epochs=200, patience=20, crossed=len(PROMPT_ATTRIBUTES))
    out = []
    for split_seed in split_seeds:
        split = split_rows(rows, mode=mode, seed=split_seed)
        figures = measure_split(table, votes, rows, split, config=config, seed=0, judge_scores=None, feature_kind="truth", rounds=rounds).figures
        per_dim = {}
        for dim in ("alignment", "musicality"):
            test = figures["test"][VOTE][dim]
            diffs = figures["differences"][dim]
            per_dim[dim] = {
                "accuracy": {name: (test[name]["accuracy"], test[name]["ci"]) for name in PREDICTORS},
                "minus": {name: (diffs[name]["difference"], diffs[name]["ci"]) for name in diffs},
                "registered_minus": {name: (d["difference"], d["ci"]) for name, d in figures["registered_differences"][dim].items()},
            }
        out.append({"split_seed": split_seed, "picks": figures["picks"], "prompt": figures["linear"].get("prompt_lowrank"), **per_dim})
    return out
