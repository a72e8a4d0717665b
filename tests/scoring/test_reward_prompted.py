"""Prompt conditioning learned from the prompts (scoring/reward/prompted.py) on studies it was not designed for.

The studies (tests/scoring/reward_prompted.py) decide alignment by invented words that no
built-in list holds, so the crossed prompt attributes are all zero there. The registered model
must beat the prompt-blind logistic regression on them, and must not lose to it where the
preference ignores the prompt. Intervals are the reported ones: 95 %, resampling test conditions.
The seed sweep behind docs/scoring.md is bench/reward_prompt.py; two split seeds run here, and
with ten test conditions a split the assertions read each split's difference and the mean.
"""

from __future__ import annotations

import numpy as np
import pytest

from scoring.reward.baselines import fit_logistic, vote_accuracy
from scoring.reward.data import split_rows
from scoring.reward.model import FeatureTable, TrainConfig, _standardiser
from scoring.reward.prompted import fit_factors, fit_prompt_lowrank, inputs, margin_of
from tests.scoring.reward_prompted import measured, study

SPLIT_SEEDS = (0, 1)
# The network is not under test here; a short run keeps the file fast.
CONFIG = TrainConfig(epochs=40, patience=8, crossed=15)


@pytest.fixture(scope="module")
def invented_word():
    return measured("invented_word", split_seeds=SPLIT_SEEDS, config=CONFIG, rounds=300)


@pytest.fixture(scope="module")
def two_words():
    return measured("two_words", split_seeds=SPLIT_SEEDS, config=CONFIG, rounds=300)


@pytest.fixture(scope="module")
def blind():
    return measured("blind", split_seeds=SPLIT_SEEDS, config=CONFIG, rounds=300)


def test_an_invented_word_that_picks_the_aligned_feature_is_learned(invented_word):
    differences, above = [], 0
    for seed in invented_word:
        accuracy = seed["alignment"]["accuracy"]
        difference, (low, _) = seed["alignment"]["registered_minus"]["logistic"]
        differences.append(difference)
        above += low > 0
        assert difference > 0.05, seed
        assert accuracy["prompt_lowrank"][0] - accuracy["logistic"][0] > 0.05, seed
        # Validation switched the prompt term on for alignment.
        assert seed["prompt"]["chosen"]["alignment"]["rank"] >= 1, seed
    # Ten test conditions a split: one split's interval is wide; the sweep over seeds is bench/reward_prompt.py.
    assert np.mean(differences) > 0.1 and above >= 1


def test_two_invented_attributes_each_turning_a_feature_are_learned(two_words):
    differences = []
    for seed in two_words:
        difference, _ = seed["alignment"]["registered_minus"]["logistic"]
        differences.append(difference)
        assert difference > 0, seed
        assert seed["alignment"]["accuracy"]["prompt_lowrank"][0] > 0.7, seed
    assert np.mean(differences) > 0.1


def test_a_preference_that_ignores_the_prompt_loses_nothing(blind, invented_word, two_words):
    # Musicality ignores the prompt in every study, alignment too in "blind".
    checks = [(seed, dim) for seed in blind for dim in ("alignment", "musicality")] + [(seed, "musicality") for seed in invented_word + two_words]
    for seed, dim in checks:
        difference, (low, high) = seed[dim]["registered_minus"]["logistic"]
        assert high >= 0, (dim, seed)
    # The word is in every prompt of "blind", and still its term stays off where it carries nothing.
    assert sum(seed["prompt"]["chosen"]["alignment"]["rank"] == 0 for seed in blind) >= 1


def test_the_weights_score_as_the_fitted_factors_and_off_means_the_blind_model():
    table, votes, rows = study("invented_word", conditions=24, clips=3, voters=1, seed=3)
    split = split_rows(rows, mode="condition", seed=0)
    train_v, val_v, test_v = votes.subset(split.train), votes.subset(split.val), votes.subset(split.test)
    mean, std = _standardiser(table.clips, np.concatenate([train_v.clip_a, train_v.clip_b]))
    model, about = fit_prompt_lowrank(table, mean, std, train_v, val_v, config=CONFIG, seed=0)
    assert about["components"] <= len(set(train_v.condition.tolist())) - 1
    chosen = about["chosen"]["alignment"]
    assert {(t["rank"], t["C"]) for t in chosen["tried"]} >= {(0, 0.1), (1, 1.0), (3, 10.0)}
    assert chosen["val_loss"] == min(t["val_loss"] for t in chosen["tried"])
    # The weights' margins on held-out conditions are the bilinear model's, the centring folded into the linear term.
    margin = model.scores(table, test_v.clip_a, test_v.condition) - model.scores(table, test_v.clip_b, test_v.condition)
    assert np.isfinite(margin).all() and np.abs(margin[:, 0]).max() > 0
    dx, _ = inputs(table, mean, std, test_v)
    w = model.weights["alignment.linear.weight"][0, : dx.shape[1]].astype(np.float64)
    if chosen["rank"] == 0:
        assert np.allclose(margin[:, 0], dx @ w, atol=1e-4)
    else:
        assert not np.allclose(margin[:, 0], dx @ w, atol=1e-3)


def test_factors_recover_a_known_bilinear_truth():
    rng = np.random.default_rng(0)
    n, d, e = 1500, 5, 6
    dx, z = rng.standard_normal((n, d)), rng.standard_normal((n, e))
    u, v = np.zeros((d, 1)), np.zeros((e, 1))
    u[0, 0], v[2, 0] = 2.0, 1.0
    truth = margin_of(dx, z, np.zeros(d), u, v)
    target = (rng.random(n) < 1.0 / (1.0 + np.exp(-truth))).astype(float)
    loss, (w, fu, fv) = fit_factors(dx[:1000], z[:1000], target[:1000], dx[1000:], z[1000:], target[1000:], rank=1, c=10.0, seed=0)
    product = fu @ fv.T
    assert abs(product[0, 2]) > 1.2 and np.abs(np.delete(product.ravel(), 2)).max() < 0.4
    blind = np.mean(np.logaddexp(0.0, -(dx[1000:] @ w)) * target[1000:] + np.logaddexp(0.0, dx[1000:] @ w) * (1 - target[1000:]))
    assert loss < blind - 0.1


def test_a_dense_prompt_embedding_as_a_text_tower_gives_carries_the_word_too():
    # The model reads whatever the context vector holds: here a 16-number "text embedding" per prompt
    # (the word's direction plus noise of the same size), with no hashed text and no attributes.
    table, votes, rows = study("invented_word", conditions=48, clips=4, voters=2, seed=5)
    rng = np.random.default_rng(5)
    words = rng.standard_normal((2, 16))
    table = FeatureTable(
        clips=table.clips, conditions=np.stack([words[c % 2] + rng.standard_normal(16) for c in range(len(table.conditions))]), reference=table.reference
    )
    split = split_rows(rows, mode="condition", seed=0)
    train_v, val_v, test_v = votes.subset(split.train), votes.subset(split.val), votes.subset(split.test)
    mean, std = _standardiser(table.clips, np.concatenate([train_v.clip_a, train_v.clip_b]))
    config = TrainConfig()
    model, about = fit_prompt_lowrank(table, mean, std, train_v, val_v, config=config, seed=0)
    blind, _ = fit_logistic(table, mean, std, train_v, val_v, interactions=False, config=config, seed=0)

    def accuracy(m):
        margin = m.scores(table, test_v.clip_a, test_v.condition) - m.scores(table, test_v.clip_b, test_v.condition)
        return vote_accuracy(margin[:, 0], test_v.target[:, 0])

    assert about["chosen"]["alignment"]["rank"] >= 1
    assert accuracy(model) - accuracy(blind) > 0.08, (accuracy(model), accuracy(blind))
