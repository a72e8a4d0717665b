"""Correlations of a judge's clip scores with the MOS over many resamples of the clips, computed together.

A resample is each clip's multiplicity (ClipResamples), so every figure is a weighted sum that one
matrix product or one running sum gives for all rounds at once: Pearson from weighted moments,
Spearman from exact integer rank sums, Kendall's tau-b from pair counts per block of ranks. Each
equals scipy's figure on the explicit resample (tests/ratings/test_rating_report_reference.py).
scoring/ratings.py reads them into the report's intervals.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from typing import NamedTuple

import numpy as np

# Kendall's tau at clip level takes its interval from the first this many resamples (LCC and SRCC use all of them):
# the figure the report has always shown, so it does not move. Each resample's tau is exact (_resampled_kendall).
KENDALL_CLIP_ROUNDS = 100


class ClipResamples(NamedTuple):
    """`rounds` resamples of n clips with replacement as each clip's multiplicity per round, clips down the rows
    (n x rounds), so putting the clips in another order moves whole contiguous rows. Read-only.

    counts: the multiplicities as integers (rank arithmetic: running sums of integers are exact and vectorise);
    weights: the same as float64 (matrix products of the linear figures); total: per round the draws (n);
    cubes: per round the sum of the cubed multiplicities (the tie correction of a variable whose values all differ)."""

    counts: np.ndarray
    weights: np.ndarray
    total: np.ndarray
    cubes: np.ndarray


def clip_draws(n: int, *, rounds: int, seed: int) -> np.ndarray:
    """The clip indices drawn by clip_resamples (rounds x n): what each resample is."""
    # 32-bit draws are the same numbers as the default 64-bit ones (below 2**32 the generator draws 32-bit values).
    return np.random.default_rng(seed).integers(0, n, size=(rounds, n), dtype=np.int32 if n * rounds < 2**31 else np.int64)


@functools.lru_cache(maxsize=4)
def clip_resamples(n: int, *, rounds: int, seed: int) -> ClipResamples:
    """The resamples of n clips for a report: the same (n, rounds, seed) gives the same ones, drawn once and shared
    by every judge and dimension."""
    draws = clip_draws(n, rounds=rounds, seed=seed)
    # Twice a rank is at most 2n + 1 and a multiplicity times it at most n (2n + 1): 32-bit integers up to 32,000 clips.
    by_round = np.empty((rounds, n), dtype=np.int32 if 2 * n * n + n < 2**31 else np.int64)
    for row, drawn in zip(by_round, draws):
        row[:] = np.bincount(drawn, minlength=n)
    counts = np.ascontiguousarray(by_round.T)
    weights = counts.astype(float)
    total = weights.sum(axis=0)
    cubes = np.einsum("ij,ij,ij->j", weights, weights, weights)
    for array in (counts, weights, total, cubes):
        array.setflags(write=False)
    return ClipResamples(counts, weights, total, cubes)


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (rounds x k) arrays (system-level figures: one mean per system and round)."""
    k = x.shape[1]
    sx, sy = x.sum(axis=1), y.sum(axis=1)
    sxx, syy, sxy = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y), np.einsum("ij,ij->i", x, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sxy - sx * sy / k) / np.sqrt((sxx - sx * sx / k) * (syy - sy * sy / k))


@functools.cache
def _blas_threads():
    try:
        from threadpoolctl import ThreadpoolController  # installed with scikit-learn
    except ImportError:
        return None
    return ThreadpoolController()


# threadpoolctl's limit is process-wide and restored on exit: two threads overlapping their limits could restore
# out of order and leave BLAS on one thread for good. One holder at a time (re-entrant: the sections nest).
_BLAS_LIMIT = threading.RLock()


@contextlib.contextmanager
def _one_blas_thread():
    """A context with BLAS on one thread. The products here are a few hundred million flops: on a busy machine a
    second BLAS thread waits for a core while the first spins, so the same product costs about four times the CPU
    (measured: 37 ms against 9 ms for the linear sums of one judge at load 6 on 2 cores)."""
    controller = _blas_threads()
    with _BLAS_LIMIT, (controller.limit(limits=1, user_api="blas") if controller is not None else contextlib.nullcontext()):
        yield


def _pearson_from_sums(total, sx, sy, sxx, syy, sxy) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sxy - sx * sy / total) / np.sqrt((sxx - sx * sx / total) * (syy - sy * sy / total))


def _linear_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The rows whose products with the multiplicities give each resample's Pearson sums (count, x, y, x^2, y^2, xy)."""
    return np.vstack([np.ones_like(x), x, y, x * x, y * y, x * y])


def resampled_pearson(x: np.ndarray, y: np.ndarray, resamples: ClipResamples) -> np.ndarray:
    """Pearson r per resample: the correlation of the resample that repeats clip i counts[i, r] times, from its
    weighted sums (one product for every round)."""
    with _one_blas_thread():
        return _pearson_from_sums(*(_linear_rows(x, y) @ resamples.weights))


def _running_rows(a: np.ndarray) -> np.ndarray:
    """Running sums down the rows of a (k x rounds) array, in place. numpy's cumsum along axis 0 walks each column with
    a stride of a whole row; adding each row to the next keeps every step contiguous."""
    rows = list(a)
    for previous, row in zip(rows, rows[1:]):
        np.add(previous, row, out=row)
    return a


class _Ranked(NamedTuple):
    """One variable ranked within every resample: `codes` each clip's value index, `order` the clips in value order,
    `sizes` the clips per value (None when all differ), `weight` (values x rounds) each value's multiplicity and
    `rank2` twice its average rank (1-based, ties averaged), `clip_weight` the clips' multiplicities in value order
    (only where asked for). All integers: every sum of them below is exact."""

    codes: np.ndarray
    order: np.ndarray
    sizes: np.ndarray | None
    weight: np.ndarray
    rank2: np.ndarray
    clip_weight: np.ndarray | None


def _ranked(x: np.ndarray, resamples: ClipResamples, *, clips: bool) -> _Ranked:
    values, codes, sizes = np.unique(x, return_inverse=True, return_counts=True)
    codes = codes.reshape(-1)
    order = np.argsort(codes, kind="stable")
    clip_weight = resamples.counts[order] if clips or len(values) > len(codes) // 8 else None
    if len(values) == len(codes):
        weight, sizes = clip_weight, None
    elif clip_weight is None:
        # Few values (a MOS on a 1-5 scale): one sparse product sums the clips' multiplicities per value.
        weight = (_incidence(codes, len(values)) @ resamples.weights).astype(resamples.counts.dtype)
    else:
        # Many values, some tied: running sums over the clips, read at the last clip of each value.
        ends = _running_rows(clip_weight.copy())[np.cumsum(sizes) - 1]
        weight = ends.copy()
        weight[1:] -= ends[:-1]
    # Twice the average rank of a value of multiplicity g whose running multiplicity (itself included) is c: 2c - g + 1.
    rank2 = _running_rows(weight * 2)
    rank2 -= weight
    rank2 += 1
    return _Ranked(codes, order, sizes, weight, rank2, clip_weight)


def _tie_sums(ranked: _Ranked, resamples: ClipResamples, total: np.ndarray) -> np.ndarray:
    """Per round the sum of g^3 - g over the variable's values (g their multiplicities), as float64 (exact)."""
    cubes = resamples.cubes if ranked.sizes is None else np.einsum("ij,ij,ij->j", ranked.weight, ranked.weight, ranked.weight, dtype=np.int64)
    return cubes - total


def weighted_srcc(x: np.ndarray, y: np.ndarray, resamples: ClipResamples) -> np.ndarray:
    """Spearman's rho per resample: Pearson r of the resample's average ranks, as scipy.stats.spearmanr gives on the
    resampled arrays.

    With twice the ranks every sum is an integer (exact whatever the order of summation). The sums of squares need no
    ranks: N draws in tie groups of sizes g have sum (rank - mean)^2 = ((N^3 - N) - sum (g^3 - g)) / 12. Only the
    cross term takes a pass over the clips, in the order of the variable with more values, whose ranks are running
    sums of the multiplicities in that order; the other one's ranks are a table per value."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(np.unique(x)) < len(np.unique(y)):
        x, y = y, x
    rx, ry = _ranked(x, resamples, clips=True), _ranked(y, resamples, clips=False)
    total = resamples.total
    whole = total * total * total - total
    sxx4 = (whole - _tie_sums(rx, resamples, total)) / 3
    syy4 = (whole - _tie_sums(ry, resamples, total)) / 3
    if rx.sizes is None:
        cross = np.multiply(rx.rank2, rx.clip_weight, out=rx.rank2)
    else:
        cross = rx.clip_weight * np.repeat(rx.rank2, rx.sizes, axis=0)
    y_codes = ry.codes[rx.order]
    if 8 * len(ry.weight) <= len(y_codes):
        # y on few values: the cross term summed per value of y first (a sparse product in the counts' integer type,
        # which holds n (2n + 1) and so every such sum), then weighted by y's ranks.
        per_value = _incidence(y_codes, len(ry.weight), dtype=cross.dtype) @ cross
        sxy4 = np.einsum("ij,ij->j", per_value, ry.rank2, dtype=np.int64)
    else:
        sxy4 = np.einsum("ij,ij->j", cross, ry.rank2[y_codes], dtype=np.int64)
    sxy4 = sxy4 - total * (total + 1) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return sxy4 / np.sqrt(sxx4 * syy4)


def _kendall_block(levels: int) -> int:
    """Clips per block for _resampled_kendall: inside a block a dense product costs ~block per clip, across blocks a table
    per block and value costs ~values / block per clip; a block near four times the root of the values balances them."""
    return int(min(256, max(32, 2 ** math.ceil(math.log2(4 * math.sqrt(max(levels, 1)))))))


def _resampled_kendall(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per resample (a column of multiplicities each, clips x rounds), as scipy.stats.kendalltau gives
    on the resampled arrays (the same counts of pairs, the same final arithmetic).

    Copies of one clip tie in both x and y. With the clips in (x, y) order, the concordant pairs are the pairs of draws
    with the later one higher in y, less those inside one x value. They are summed inside blocks of consecutive clips
    by a dense 0/1 product, and across blocks from each block's multiplicity per y value: O(block + values / block)
    per clip and round instead of scipy's O(log n) on every resample's n values."""
    cx, cy = np.unique(x, return_inverse=True)[1].reshape(-1), np.unique(y, return_inverse=True)[1].reshape(-1)
    swapped = cy.max(initial=0) > cx.max(initial=0)
    if swapped:
        cx, cy = cy, cx  # tau is symmetric: y is the variable with fewer values
    levels = int(cy.max(initial=0)) + 1
    order = np.lexsort((cy, cx))
    cx, cy = cx[order], cy[order]
    n, rounds = counts.shape
    size = _kendall_block(levels)
    blocks = -(-n // size)
    w = np.zeros((blocks * size, rounds))
    w[:n] = counts[order]
    total = w.sum(axis=0)

    def squares(starts: np.ndarray) -> np.ndarray:
        """Sum of g^2 over the groups of consecutive clips that start at `starts`."""
        groups = w[:n] if len(starts) == n else np.add.reduceat(w[:n], starts, axis=0)
        return np.einsum("ij,ij->j", groups, groups)

    new_x = np.r_[True, cx[1:] != cx[:-1]]
    sq_x, sq_xy = squares(np.flatnonzero(new_x)), squares(np.flatnonzero(new_x | np.r_[True, cy[1:] != cy[:-1]]))
    per_y = _incidence(cy, levels) @ w[:n]
    sq_y = np.einsum("ij,ij->j", per_y, per_y)
    # Within blocks: later[b, i, j] = 1 where clip j comes after clip i in block b and is higher in y.
    codes = np.zeros(blocks * size, dtype=np.intp)
    codes[:n] = cy
    wb, cb = w.reshape(blocks, size, rounds), codes.reshape(blocks, size)
    later = (cb[:, :, None] < cb[:, None, :]) & np.triu(np.ones((size, size), dtype=bool), 1)
    within = np.einsum("bir,bir->r", wb, np.matmul(later.astype(float), wb))
    # Across blocks: each block's multiplicity per y value; a clip pairs with what lies below its y value in earlier
    # blocks. Running sums over the values are contiguous rows of the (values, blocks, rounds) table; over blocks, a loop.
    table = (_incidence(codes * blocks + np.arange(blocks * size) // size, levels * blocks) @ w).reshape(levels, blocks, rounds)
    below = _running_rows(table.reshape(levels, -1).copy()).reshape(table.shape)
    below -= table
    before = np.einsum("lbr,lbr->r", table, below)
    for block in range(1, blocks):
        below[:, block] += below[:, block - 1]
    across = np.einsum("lbr,lbr->r", table, below) - before
    concordant = within + across - (sq_x - sq_xy) / 2
    tot, xtie, ytie, ntie = total * (total - 1) / 2, (sq_x - total) / 2, (sq_y - total) / 2, (sq_xy - total) / 2
    if swapped:
        xtie, ytie = ytie, xtie  # scipy's order of the two divisions below
    con_minus_dis = 2 * concordant - (tot - xtie - ytie + ntie)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau[(xtie == tot) | (ytie == tot)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _incidence(codes: np.ndarray, width: int, dtype=float):
    """The (width x n) 0/1 matrix with a one at (codes[i], i): a product with it sums rows per code."""
    from scipy import sparse

    return sparse.csr_matrix((np.ones(len(codes), dtype=dtype), (codes, np.arange(len(codes)))), shape=(width, len(codes)))


def _tau_b_small(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per row of (rounds x k) arrays with few columns (systems): all pairs at once."""
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
