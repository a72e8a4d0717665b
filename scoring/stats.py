"""Numeric helpers shared by the agreement statistics and the judge evaluation: resampling, intervals,
and the paired tests and significance groups that compare judges scored on the same items."""

from __future__ import annotations

import math

import numpy as np


def num(value, digits: int = 4):
    """A JSON-safe number: NaN and inf become None."""
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return round(value, digits)


def bootstrap_sums(stats: np.ndarray, *, rounds: int, seed: int) -> np.ndarray:
    """Column sums of `stats` (units x K) over `rounds` resamples of the units, with replacement.

    Resampling U units with replacement gives each *distinct* row a multinomial
    count, so the draws are made over distinct rows (a pair with 3 votes, 2 for
    clip_a, looks like every other such pair): the same distribution as drawing
    unit indices, at the cost of the few hundred distinct rows instead of the
    tens of thousands of units.
    """
    units, width = stats.shape
    if units == 0 or rounds == 0:
        return np.full((rounds, width), np.nan)
    distinct, counts = _distinct_rows(stats) if np.isfinite(stats).all() else np.unique(stats, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(units, counts / units, size=rounds).astype(float)
    return weights @ distinct


def _distinct_rows(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(stats, axis=0, return_counts=True) for finite rows, in the same (lexicographic) order: a lexsort
    of the columns, where np.unique sorts whole rows as records (a sixth of the time at 100,000 votes)."""
    order = np.lexsort(stats.T[::-1])
    ordered = stats[order]
    starts = np.flatnonzero(np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)])
    return ordered[starts], np.diff(np.r_[starts, len(ordered)])


def percentile_ci(samples: np.ndarray) -> list:
    """The 95% percentile interval of bootstrap samples, non-finite samples left out; [None, None] when none remain."""
    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return [None, None]
    low, high = np.percentile(samples, [2.5, 97.5])
    return [num(low), num(high)]


# --- Many judges on the same items: one set of resamples for all of them --------------------------


def cluster_draws(n_clusters: int, *, rounds: int, seed: int, chunk: int = 100):
    """Bootstrap draws of clusters as counts: yields (first round, counts of shape (rounds in chunk, n_clusters)).

    Drawing cluster indices and counting them is the same multinomial draw, and much faster than
    rng.multinomial over thousands of categories; the smallest integer type that holds an index
    makes the draw cheaper still. Counts are whole numbers far below 2**24, so float32 products
    with whole or half sums are exact.
    """
    rng = np.random.default_rng(seed)
    index_type = np.uint16 if n_clusters <= np.iinfo(np.uint16).max else np.uint32
    for start in range(0, rounds, chunk):
        stop = min(start + chunk, rounds)
        draws = rng.integers(0, n_clusters, size=(stop - start, n_clusters), dtype=index_type)
        offsets = (np.arange(stop - start, dtype=np.int64) * n_clusters)[:, None]
        yield start, np.bincount((draws + offsets).ravel(), minlength=(stop - start) * n_clusters).reshape(stop - start, n_clusters).astype(np.float32)


def cluster_bootstrap(scores, clusters=None, *, rounds: int, seed: int, chunk: int = 100) -> np.ndarray:
    """Bootstrap accuracies (rounds x S) of S submissions, resampling clusters of items with replacement.

    scores: S x N match scores; clusters: a code per item (items that share a condition are not
    independent, so they are drawn together), None for one cluster per item. Every round draws
    the same clusters for every submission. A cluster drawn k times counts k times: the draw is a
    count per cluster, and each round's accuracy is (counts @ cluster sums) / (counts
    @ cluster sizes), all as matrix products.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    n_sub, n_items = scores.shape
    if n_items == 0 or rounds <= 0:
        return np.full((max(rounds, 0), n_sub), np.nan)
    codes = np.arange(n_items) if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1].reshape(-1)
    n_clusters = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    sums = np.stack([np.bincount(codes, weights=row, minlength=n_clusters) for row in scores])  # S x C
    out = np.empty((rounds, n_sub))
    sums32, sizes32 = sums.T.astype(np.float32), sizes.astype(np.float32)
    for start, counts in cluster_draws(n_clusters, rounds=rounds, seed=seed, chunk=chunk):
        out[start : start + len(counts)] = (counts @ sums32).astype(float) / (counts @ sizes32).astype(float)[:, None]
    return out


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a vector of p-values (family-wise error over all pairs)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def paired_tests(boot, *, alpha: float = 0.05) -> dict:
    """Paired bootstrap test between every two submissions from the same resamples (rounds x S).

    The p-value of i against j is twice the smaller share of rounds in which the difference of
    their accuracies falls on either side of 0 (capped at 1); p-values are Holm-adjusted over all
    pairs. Returns "p" (S x S adjusted, 1 on the diagonal) and "significant" (S x S bools).
    """
    boot = np.asarray(boot, dtype=float)
    n_sub = boot.shape[1]
    p = np.ones((n_sub, n_sub))
    if n_sub > 1 and boot.shape[0] > 0:
        upper = np.triu_indices(n_sub, k=1)
        diff = boot[:, upper[0]] - boot[:, upper[1]]
        raw = np.minimum(1.0, 2 * np.minimum((diff <= 0).mean(axis=0), (diff >= 0).mean(axis=0)))
        adjusted = holm(raw)
        p[upper] = adjusted
        p[(upper[1], upper[0])] = adjusted
    return {"p": p, "significant": p < alpha}


def mcnemar_tests(scores) -> dict:
    """McNemar's exact test between every two submissions scored on the same items (S x N match scores).

    An item counts as correct only with full credit (score 1); half credit (a BOTH on either side)
    and no answer count as not correct. For submissions i and j, b = items i got right and j wrong,
    c = the reverse; the p-value is the two-sided exact binomial test of min(b, c) out of b + c at
    one half (1 when b + c = 0). Returns "p" (S x S raw), "p_holm" (S x S Holm-adjusted over all
    pairs) and "discordant" (S x S: entry [i][j] = items i got right and j wrong).

    At one half the binomial is symmetric, so scipy.stats.binomtest's two-sided p-value is
    min(1, 2 * cdf(min(b, c))): one vectorised cdf for all pairs instead of a binomtest call per
    pair (bench/benchmark.py times both); tests check it equals binomtest.
    """
    from scipy.stats import binom

    correct = np.atleast_2d(np.asarray(scores, dtype=float)) == 1.0
    n_sub = correct.shape[0]
    as_int = correct.astype(np.int64)
    discordant = as_int @ (1 - as_int).T
    p = np.ones((n_sub, n_sub))
    p_holm = np.ones((n_sub, n_sub))
    if n_sub > 1:
        upper = np.triu_indices(n_sub, k=1)
        b, c = discordant[upper], discordant[(upper[1], upper[0])]
        raw = np.minimum(1.0, 2.0 * binom.cdf(np.minimum(b, c), b + c, 0.5))
        raw[b + c == 0] = 1.0
        p[upper] = raw
        p[(upper[1], upper[0])] = raw
        adjusted = holm(raw)
        p_holm[upper] = adjusted
        p_holm[(upper[1], upper[0])] = adjusted
    return {"p": p, "p_holm": p_holm, "discordant": discordant}


def significance_groups(acc, significant) -> np.ndarray:
    """Rank of each submission: 1 + the number of submissions significantly better than it.

    Submissions that share a rank form a group: none of them is significantly worse than one of
    the others ranked above it by the test (a judge's place is only as precise as the data allows).
    """
    acc = np.asarray(acc, dtype=float)
    significant = np.asarray(significant, dtype=bool)
    better = (acc[None, :] > acc[:, None]) & significant
    return 1 + better.sum(axis=1)


# --- Few clusters: a t-interval instead of the percentile bootstrap ---------------------------------

# Below this many clusters the percentile bootstrap of a clustered mean is liberal (it ignores the
# (C - 1) / C shrinkage of the resampled spread and uses normal tails): about 85 % at 6-7 clusters
# for a nominal 95 %. The t-interval below covers close to nominal there (tests/scoring/test_stats_coverage.py).
SMALL_SAMPLE_CLUSTERS = 20


def cluster_t_interval(scores, clusters=None, *, level: float = 0.95) -> list:
    """Interval of the mean of `scores` (pooled over items) that treats clusters as the independent units.

    The pooled mean is a ratio (cluster sums over cluster sizes); its cluster-robust variance is
    C / (C - 1) * sum_c (sum_c - mean * size_c)^2 / N^2, and the interval takes Student's t with
    C - 1 degrees of freedom. [None, None] with fewer than 2 clusters; a zero spread gives a
    zero-width interval.
    """
    from scipy.stats import t as student

    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.size == 0:
        return [None, None]
    codes = np.arange(scores.size) if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1].reshape(-1)
    n_clusters = int(codes.max()) + 1
    if n_clusters < 2:
        return [None, None]
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    sums = np.bincount(codes, weights=scores, minlength=n_clusters)
    mean = sums.sum() / sizes.sum()
    residual = sums - mean * sizes
    se = math.sqrt(n_clusters / (n_clusters - 1) * float(residual @ residual)) / sizes.sum()
    half = float(student.ppf(0.5 + level / 2, n_clusters - 1)) * se
    return [num(mean - half), num(mean + half)]
