"""The reward model on known-truth studies (tests/scoring/reward_truth.py), over several split seeds.

- "quadratic": musicality is -(x0^2 + x1^2), which no linear model orders; alignment is linear.
  The network (its capacity chosen on validation) must beat logistic regression on the first, with
  every split's interval above 0, and tie it on the second.
- "bright_dark": alignment depends on a word of the prompt. The network and the logistic model
  with interactions (both reading the prompt attributes) must beat the prompt-blind logistic
  regression, with every split's interval above 0.

Intervals are the reported ones: 95 %, resampling test conditions (Student t below 20 of them).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.scoring.reward_truth import measured

SPLIT_SEEDS = (0, 1, 2)
SIZES = {"conditions": 48, "clips": 4, "voters": 2}


@pytest.fixture(scope="module")
def quadratic():
    return measured("quadratic", split_seeds=SPLIT_SEEDS, rounds=500, **SIZES)


@pytest.fixture(scope="module")
def bright_dark():
    return measured("bright_dark", split_seeds=SPLIT_SEEDS, rounds=500, **SIZES)


def test_the_network_beats_logistic_regression_on_a_nonlinear_truth(quadratic):
    for seed in quadratic:
        difference, (low, high) = seed["musicality"]["minus"]["logistic"]
        assert low > 0, seed
        assert seed["musicality"]["accuracy"]["network"][0] > 0.7
        # The registered model is picked on validation: the network here.
        assert seed["picks"]["musicality"] == "network"


def test_the_network_ties_logistic_regression_on_a_linear_truth(quadratic):
    differences = []
    for seed in quadratic:
        difference, (low, high) = seed["alignment"]["minus"]["logistic"]
        assert low <= 0.02 and high >= -0.02, seed
        differences.append(difference)
    assert abs(np.mean(differences)) < 0.03


def test_a_preference_that_depends_on_the_prompt_is_learned_and_the_prompt_blind_baseline_is_beaten(bright_dark):
    for seed in bright_dark:
        accuracy = seed["alignment"]["accuracy"]
        assert accuracy["logistic"][0] < 0.62, seed  # blind to the prompt: about a coin
        difference, (low, high) = seed["alignment"]["minus"]["logistic"]
        assert low > 0, seed
        assert accuracy["logistic_interactions"][0] - accuracy["logistic"][0] > 0.15, seed
        assert accuracy["registered"][0] > 0.7, seed
