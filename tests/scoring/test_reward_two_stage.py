"""Two-stage reward training on a known truth (no database, no audio).

The truth is made here, not by the model's feature code: each clip has three hidden qualities
h (standard normal); alignment = h0 - 0.5 h2, musicality = tanh(h1) + 0.3 h0 h2. The model sees
six features: noisy copies of h0, h1, h2 (noise sd 0.3) and three numbers unrelated to the truth.
Expert votes (few) follow a Bradley–Terry coin on the true utilities (P(A) = sigmoid(4 (u_A - u_B)));
pseudo-labels (many) are the true winner flipped with a known error rate, as a judge would be wrong;
MOS comes from a rating study of some clips (true utility squashed onto the scale, plus rating noise).
Test pairs are labelled by the true utilities. Per seed: accuracy of each model on the same
test pairs and the paired difference two-stage minus stage-2-alone with a bootstrap interval over
test pairs; over the seeds, the mean difference and a t interval.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scoring.reward.model import FeatureTable, MOSTargets, TrainConfig, TrainingError, Votes, mos_normalise, train
from scoring.reward.stages import StageData, train_stages

SEEDS = (0, 1, 2, 3, 4)
EXPERT, VALIDATION, PSEUDO, TEST, RATED = 200, 60, 2000, 1000, 40
HIDDEN, UNRELATED = 8, 8
ALIGNMENT_WEIGHTS = np.array([1.0, -0.8, 0.6, 0.5, -0.4, 0.3, 0.3, -0.2])
MUSICALITY_WEIGHTS = np.array([0.2, 0.9, -0.7, 0.5, 0.4, -0.4, 0.3, 0.2])
CONFIG = TrainConfig(hidden=8, rank=2, epochs=40, patience=8, lr=0.02, batch_size=128, select_capacity=False)


def _utilities(hidden: np.ndarray) -> np.ndarray:
    alignment = hidden @ ALIGNMENT_WEIGHTS
    musicality = np.tanh(hidden @ MUSICALITY_WEIGHTS) + 0.5 * hidden[:, 0] * hidden[:, 1]
    return np.stack([alignment, musicality], axis=1)


def _pairs(rng, n: int, clips: int, conditions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = rng.integers(0, clips, n)
    b = (a + rng.integers(1, clips, n)) % clips
    return a, b, rng.integers(0, conditions, n)


def world(seed: int, *, pseudo_error: float, clips: int = 800, conditions: int = 40):
    rng = np.random.default_rng(seed)
    hidden = rng.standard_normal((clips, HIDDEN))
    utility = _utilities(hidden)
    features = np.concatenate([hidden + 0.5 * rng.standard_normal(hidden.shape), rng.standard_normal((clips, UNRELATED))], axis=1)
    table = FeatureTable(clips=features, conditions=rng.standard_normal((conditions, 2)), reference=np.full(conditions, -1))

    def expert(n):
        a, b, c = _pairs(rng, n, clips, conditions)
        p = 1.0 / (1.0 + np.exp(-2.0 * (utility[a] - utility[b])))
        return Votes(a, b, c, (rng.random(p.shape) < p).astype(float))

    def pseudo(n):
        a, b, c = _pairs(rng, n, clips, conditions)
        truth = (utility[a] > utility[b]).astype(float)
        wrong = rng.random(truth.shape) < pseudo_error
        return Votes(a, b, c, np.where(wrong, 1.0 - truth, truth))

    a, b, c = _pairs(rng, TEST, clips, conditions)
    test = Votes(a, b, c, (utility[a] > utility[b]).astype(float))
    rated = rng.choice(clips, RATED, replace=False)
    mos = 3.0 + 2.0 * np.tanh(utility[rated] / 1.5) + 0.6 * rng.standard_normal((RATED, 2))
    mos_targets = MOSTargets(rated, rng.integers(0, conditions, RATED), np.vectorize(lambda v: mos_normalise(v, 1.0, 5.0))(mos))
    return table, expert(EXPERT), expert(VALIDATION), pseudo(PSEUDO), test, mos_targets


def _correct(model, table, votes) -> np.ndarray:
    margin = model.scores(table, votes.clip_a, votes.condition) - model.scores(table, votes.clip_b, votes.condition)
    return ((margin > 0) == (votes.target > 0.5)).astype(float)


def _bootstrap(diff: np.ndarray, seed: int, rounds: int = 1000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), (rounds, len(diff)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def measured(pseudo_error: float) -> dict:
    per_seed = []
    for seed in SEEDS:
        table, train_v, val_v, pseudo_v, test_v, mos = world(seed, pseudo_error=pseudo_error)
        models = train_stages(table, train_v, val_v, StageData(pseudo=pseudo_v, mos=mos, smoothing=0.2), config=CONFIG, seed=seed)
        correct = {name: _correct(getattr(models, name), table, test_v) for name in ("two_stage", "stage2_only", "stage1_only")}
        # Both dimensions' test pairs together: one difference per seed, its interval resampling test pairs.
        diff = (correct["two_stage"] - correct["stage2_only"]).ravel()
        per_seed.append({"accuracy": {k: float(v.mean()) for k, v in correct.items()}, "difference": float(diff.mean()), "ci": _bootstrap(diff, seed)})
    diffs = np.array([s["difference"] for s in per_seed])
    half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
    return {"per_seed": per_seed, "mean": float(diffs.mean()), "ci": (float(diffs.mean() - half), float(diffs.mean() + half))}


@pytest.mark.slow  # about 25 s on a busy 2-core machine
def test_two_stage_beats_stage_two_alone_with_good_pseudo_labels():
    result = measured(0.20)
    print(result)
    assert result["ci"][0] > 0, result
    assert sum(s["difference"] > 0 for s in result["per_seed"]) >= 4, result
    # Not asserted, and reported in docs/scoring.md: here stage 1 alone is better still (0.79-0.83
    # against 0.78-0.80): fine-tuning on 200 noisy votes gives some of it back.


@pytest.mark.slow  # about 30 s
def test_bad_pseudo_labels_do_not_hurt_by_more_than_the_interval():
    result = measured(0.45)
    print(result)
    low, high = result["ci"]
    # Not worse beyond the spread over seeds: the interval reaches zero or above, and the mean loss is within its half-width.
    assert high >= 0, result
    assert result["mean"] >= -(high - low) / 2, result


def test_fine_tuning_starts_from_stage_one_and_smoothing_is_checked():
    table, train_v, val_v, pseudo_v, _, mos = world(0, pseudo_error=0.2, clips=200)
    config = TrainConfig(hidden=4, rank=2, epochs=3, patience=3, select_capacity=False)
    stage1 = train(table, pseudo_v, val_v, config=config, seed=0, smoothing=0.2)
    untouched = train(table, train_v, val_v, config=config, seed=0, init=stage1, mos=mos)
    assert np.array_equal(untouched.mean, stage1.mean)  # the stage-1 standardiser is kept
    assert untouched.weights.keys() == stage1.weights.keys()
    with pytest.raises(TrainingError, match="smoothing"):
        train(table, pseudo_v, val_v, config=config, seed=0, smoothing=1.0)
    with pytest.raises(TrainingError, match="smoothing"):
        StageData(pseudo=pseudo_v, smoothing=-0.1)
    # Same data and seed: the same two-stage weights.
    one = train_stages(table, train_v, val_v, StageData(pseudo=pseudo_v, mos=mos), config=config, seed=3)
    two = train_stages(table, train_v, val_v, StageData(pseudo=pseudo_v, mos=mos), config=config, seed=3)
    assert one.two_stage.digest() == two.two_stage.digest()
    assert one.stage2_only.digest() != one.two_stage.digest()
