"""The resampled figures of the ratings report and of MOS benchmarks equal scipy's on the resampled arrays."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from scoring import ratings, resampled


@pytest.mark.parametrize("case", ["continuous vs few levels", "few vs continuous", "both continuous", "both few", "same array"])
def test_weighted_srcc_is_spearman_of_each_resample(case):
    rng = np.random.default_rng(3)
    n = 400
    mos = np.round(rng.uniform(1, 5, n) * 4) / 4
    score = mos + rng.normal(0, 1, n)
    x, y = {
        "continuous vs few levels": (score, mos),
        "few vs continuous": (mos, score),
        "both continuous": (score, score + rng.normal(0, 1, n)),
        "both few": (np.round(score), mos),
        "same array": (mos, mos),
    }[case]
    resamples, draws = resampled.clip_resamples(n, rounds=50, seed=1), resampled.clip_draws(n, rounds=50, seed=1)
    got = resampled.weighted_srcc(x, y, resamples)
    expected = [sps.spearmanr(x[d], y[d]).statistic for d in draws]
    assert np.allclose(got, expected, atol=1e-12)
    # Kendall's tau-b of every resample: the same counts of pairs and the same final arithmetic as scipy's.
    taus = resampled._resampled_kendall(x, y, resamples.counts)
    assert np.array_equal(taus, [sps.kendalltau(x[d], y[d]).statistic for d in draws], equal_nan=True)


def test_resamples_are_drawn_once_and_cannot_be_changed():
    first = resampled.clip_resamples(30, rounds=10, seed=2)
    assert resampled.clip_resamples(30, rounds=10, seed=2) is first
    for array in first:
        with pytest.raises(ValueError):
            array[0] = 5


def test_row_percentiles_match_numpy_with_and_without_gaps():
    rng = np.random.default_rng(4)
    for shape in ((20, 1000), (5, 3), (4, 1)):
        samples = rng.normal(size=shape)
        low, high = ratings._percentiles(samples, (2.5, 97.5))
        assert np.allclose(low, np.percentile(samples, 2.5, axis=1)) and np.allclose(high, np.percentile(samples, 97.5, axis=1))
    samples = rng.normal(size=(3, 9))
    samples[0, 0] = np.nan
    assert ratings._percentiles(samples, (50.0,))[0][0] == pytest.approx(np.nanpercentile(samples[0], 50.0))


def test_row_percentiles_with_some_rows_gapped_equal_numpy_and_may_reorder_in_place():
    rng = np.random.default_rng(5)
    samples = rng.normal(size=(50, 1000))
    samples[[3, 17], [10, 999]] = np.nan
    samples[40] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN row
        expected = [np.nanpercentile(samples, q, axis=1) for q in (2.5, 50.0, 97.5)]
    for overwrite in (False, True):
        work = samples.copy()
        got = ratings._percentiles(work, (2.5, 50.0, 97.5), overwrite=overwrite)
        for g, e in zip(got, expected):
            assert np.allclose(g, e, equal_nan=True, rtol=0, atol=1e-12)
        # Each row keeps its values (a partition only reorders them); without overwrite, their order too.
        assert np.array_equal(np.sort(work, axis=1), np.sort(samples, axis=1), equal_nan=True)
        assert overwrite or np.array_equal(work, samples, equal_nan=True)


@pytest.mark.engine
def test_reports_in_several_threads_leave_blas_as_they_found_it():
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    before, seen = blas_threads(), []

    def report():
        for _ in range(50):
            with resampled._one_blas_thread(), resampled._one_blas_thread():
                seen.append(blas_threads())

    workers = [threading.Thread(target=report) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert blas_threads() == before and all(n == 1 for counts in seen for n in counts)
