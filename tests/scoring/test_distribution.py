"""FAD and KAD: equal to fadtk's and kadtk's on the same embeddings, intervals that cover a known distance, and the figures in a study's results."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import linalg

from scoring import distribution as dist

from .reference_libraries import fadtk_fad, kadtk_kad

SHAPES = [((300, 16), (250, 16)), ((120, 32), (90, 32)), ((40, 64), (50, 64))]


def _sets(seed: int, shape_x, shape_y):
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((shape_x[1], shape_x[1])) / np.sqrt(shape_x[1])
    x = rng.standard_normal(shape_x) @ mix
    y = 0.8 * rng.standard_normal(shape_y) @ mix + 0.3
    return x, y


@pytest.mark.parametrize("shape_x,shape_y", SHAPES)
def test_fad_equals_fadtk_on_the_same_embeddings(monkeypatch, shape_x, shape_y):
    fadtk = fadtk_fad(monkeypatch)
    x, y = _sets(1, shape_x, shape_y)
    mu1, cov1 = fadtk.calc_embd_statistics(x)
    mu2, cov2 = fadtk.calc_embd_statistics(y)
    theirs = float(np.real(fadtk.calc_frechet_distance(mu1, cov1, mu2, cov2)))
    assert dist.frechet_distance(x, y) == pytest.approx(theirs, abs=1e-4)
    assert dist.frechet_distance(y, x) == pytest.approx(theirs, abs=1e-4)


@pytest.mark.parametrize("shape_x,shape_y", SHAPES)
def test_kad_equals_kadtk_on_the_same_embeddings(monkeypatch, shape_x, shape_y):
    kadtk = kadtk_kad(monkeypatch)
    x, y = _sets(2, shape_x, shape_y)
    tx, ty = torch.tensor(x), torch.tensor(y)
    # kadtk's default bandwidth: the median distance within its second set.
    default = float(kadtk.calc_kernel_audio_distance(tx, ty, (None, None), "cpu", precision=torch.float64))
    assert dist.kernel_distance(x, y, bandwidth=dist.median_distance(y)) == pytest.approx(default, abs=1e-4)
    # Ours: the reference's (first set's) median, the same for every system scored against it.
    h = kadtk.median_pairwise_distance(x)
    assert dist.median_distance(x) == pytest.approx(h, rel=1e-6)
    ours = float(kadtk.calc_kernel_audio_distance(tx, ty, (None, None), "cpu", bandwidth=dist.median_distance(x), precision=torch.float64))
    assert dist.kernel_distance(x, y) == pytest.approx(ours, abs=1e-4)


def test_fad_equals_the_textbook_formula_with_a_matrix_square_root():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((200, 12)), 1.5 * rng.standard_normal((150, 12)) + 0.2
    c1, c2 = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    root = linalg.sqrtm(c1 @ c2).real
    diff = x.mean(0) - y.mean(0)
    expected = diff @ diff + np.trace(c1) + np.trace(c2) - 2 * np.trace(root)
    assert dist.frechet_distance(x, y) == pytest.approx(expected, abs=1e-6)
    # Bootstrap weights of one draw each are the plain sets.
    assert dist._weighted_fad(x, y, np.ones(200), np.ones(150)) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("shape_x,shape_y", SHAPES)
def test_a_resample_is_the_fad_of_the_clips_it_repeats(shape_x, shape_y):
    x, y = _sets(4, shape_x, shape_y)
    boot = dist.fad_resamples(x, y, rounds=6, seed=5)
    wx, wy = dist._counts(len(x), rounds=6, seed=5), dist._counts(len(y), rounds=6, seed=6)
    for r in range(6):
        repeated = dist.frechet_distance(np.repeat(x, wx[r].astype(int), axis=0), np.repeat(y, wy[r].astype(int), axis=0))
        assert boot[r] == pytest.approx(repeated, abs=1e-4)


# Two Gaussians with diagonal covariances: FD = |mu1 - mu2|² + sum (s1 - s2)².
D, N = 8, 150
MU1, MU2 = np.zeros(D), np.full(D, 0.3)
S1, S2 = np.ones(D), np.linspace(0.6, 1.4, D)
TRUE_FAD = float(((MU1 - MU2) ** 2).sum() + ((S1 - S2) ** 2).sum())


def _gaussians(seed: int):
    rng = np.random.default_rng(seed)
    return MU1 + S1 * rng.standard_normal((N, D)), MU2 + S2 * rng.standard_normal((N, D))


def test_fad_interval_covers_a_known_distance_at_about_the_nominal_rate():
    covered, naive, plain, extrapolated = 0, 0, [], []
    seeds = 100
    for seed in range(seeds):
        x, y = _gaussians(seed)
        fad = dist.frechet_distance(y, x)
        boot = dist.fad_resamples(y, x, rounds=200, seed=seed)
        lo, hi = dist.basic_interval(fad, boot)
        covered += lo <= TRUE_FAD <= hi
        p_lo, p_hi = dist.percentile_interval(boot)
        naive += p_lo <= TRUE_FAD <= p_hi
        plain.append(fad)
        extrapolated.append(dist.fad_infinity(y, x, seed=seed)["value"])
    # 95 % nominal: 100 seeds give 90 to 99 covered with 95 % probability.
    assert 89 <= covered <= 100
    # FAD is biased upward at 150 clips: the percentile interval around it misses the truth most of the time.
    assert np.mean(plain) - TRUE_FAD > 0.2
    assert naive < 50
    # FAD∞ takes most of the bias out.
    assert abs(np.mean(extrapolated) - TRUE_FAD) < 0.25 * (np.mean(plain) - TRUE_FAD)


def _gaussian_kernel_mean(mean_diff: np.ndarray, var_sum: np.ndarray, h: float) -> float:
    """E exp(-|Z|² / 2h²) for Z ~ N(mean_diff, diag(var_sum))."""
    return float(np.prod(1 + var_sum / h**2) ** -0.5 * np.exp(-0.5 * (mean_diff**2 / (var_sum + h**2)).sum()))


def test_kad_interval_covers_a_known_distance():
    h = 4.0
    zero = np.zeros(D)
    truth = 100 * (_gaussian_kernel_mean(zero, 2 * S1**2, h) + _gaussian_kernel_mean(zero, 2 * S2**2, h) - 2 * _gaussian_kernel_mean(MU1 - MU2, S1**2 + S2**2, h))
    covered, values = 0, []
    for seed in range(60):
        x, y = _gaussians(1000 + seed)
        kad = dist.kernel_distance(x, y, bandwidth=h)
        lo, hi = dist.percentile_interval(dist.kad_resamples(x, y, bandwidth=h, rounds=300, seed=seed))
        covered += lo <= truth <= hi
        values.append(kad)
    assert 52 <= covered <= 60  # 57 expected
    # Unbiased: the mean over seeds lies within three standard errors of the truth.
    assert abs(np.mean(values) - truth) < 3 * np.std(values) / np.sqrt(len(values))


def test_bad_embeddings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="different embedding sizes"):
        dist.frechet_distance(np.zeros((5, 3)), np.zeros((5, 4)))
    with pytest.raises(ValueError, match=r"\(clips, dimensions\)"):
        dist.kernel_distance(np.zeros(5), np.zeros((5, 4)))
    few = dist.distances(np.zeros((2, 4)), np.ones((10, 4)))
    assert few["clips"] == 2 and "fad" not in few and "fewer than 3" in few["note"]


def test_with_no_more_clips_than_dimensions_fad_is_flagged_and_its_interval_misses():
    """The limit the page warns about: 50 clips in 64 dimensions, where FAD measures mostly the clip count."""
    d, n = 64, 50
    s2 = np.linspace(0.6, 1.4, d)
    truth = float(d * 0.3**2 + ((1 - s2) ** 2).sum())
    missed = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x, y = rng.standard_normal((n, d)), 0.3 + s2 * rng.standard_normal((n, d))
        row = dist.distances(y, x, rounds=100, seed=seed)
        assert row["few_clips"] and row["fad"] > 3 * truth
        missed += not (row["fad_lower"] <= truth <= row["fad_upper"])
    assert missed == 10
    wide = dist.distances(np.random.default_rng(0).standard_normal((80, 8)), np.random.default_rng(1).standard_normal((90, 8)), rounds=0)
    assert not wide["few_clips"] and "fad_lower" not in wide
