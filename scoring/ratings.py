"""Statistics for absolute ratings (acr 1-5, multi-stimulus 0-100): MOS, agreement, screening, judges against MOS.

Pure arithmetic on a frame of ratings, one row per (submission, clip, dimension) with the columns
RATING_COLUMNS; scoring/ratings_report.py reads the frame from a study and builds the report section.

- MOS per clip and per system with the t-based 95 % interval of ITU-T P.808 (clause 10 / P.1401:
  mean +- t(0.975, n-1) * s / sqrt(n) over the ratings) and a bootstrap over raters (raters
  resampled with replacement, each bringing all their ratings; percentile interval).
- Krippendorff's alpha at the interval and ordinal levels (the `krippendorff` package).
- ICC(2,k) (Shrout & Fleiss 1979, two-way random, average of k raters) on the largest block of
  clips that the same k raters all rated; the two-way ANOVA is written out here (no maintained
  package of the environment offers it without a heavy dependency tree) and checked against the
  paper's own worked example (tests/scoring/test_ratings_stats.py).
- Per-rater bias (mean of rating minus the clip's MOS without that rater) and consistency (Pearson
  r between the rater's ratings and those leave-one-out means).
- Quality control: P.808 gold and trapping items (rating outside the expected range fails) and
  ITU-R BS.1534-3 post-screening for multi-stimulus items (hidden reference below 90, or low
  anchor above 90, in more than 15 % of an assessor's trials).
- Judges against humans: LCC, SRCC and Kendall's tau-b at clip level and at system level, with
  percentile intervals from resampling clips.
"""

from __future__ import annotations

import functools
import math

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

from .stats import num, paired_tests, percentile_ci, significance_groups

RATING_COLUMNS = ["submission_id", "annotator_id", "item_id", "clip_id", "system", "dimension", "value", "kind", "role", "expected_low", "expected_high"]
SCREEN_REFERENCE_BELOW = 90.0
SCREEN_ANCHOR_ABOVE = 90.0
SCREEN_SHARE = 0.15


def empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("value", "expected_low", "expected_high") else "object") for c in RATING_COLUMNS})


# --- MOS -------------------------------------------------------------------------------------------


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """P.808's interval for one mean: mean +- t(1 - alpha/2, n-1) * sd / sqrt(n); None below two ratings."""
    n = len(values)
    if n < 2:
        return None
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def mos_by(frame: pd.DataFrame, key: str, level: float = 0.95) -> pd.DataFrame:
    """Per group of `key` (clip_id or system) and dimension: n, MOS, sd and the t interval (vectorised)."""
    grouped = frame.groupby([key, "dimension"], sort=True)["value"]
    out = grouped.agg(n="count", mos="mean", sd="std").reset_index()
    tcrit = sps.t.ppf(0.5 + level / 2, np.maximum(out["n"] - 1, 1))
    half = np.where(out["n"] >= 2, tcrit * out["sd"] / np.sqrt(out["n"]), np.nan)
    out["t_low"], out["t_high"] = out["mos"] - half, out["mos"] + half
    return out


def _percentiles(samples: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """Row-wise percentiles (linear interpolation, as np.percentile) ignoring NaN, without nanpercentile's per-row loop."""
    if samples.shape[1] and not np.isnan(samples).any():
        # Every row complete: the few order statistics needed are found by partitioning, not a full sort.
        positions = [q / 100.0 * (samples.shape[1] - 1) for q in qs]
        kth = sorted({int(np.floor(p)) for p in positions} | {min(int(np.floor(p)) + 1, samples.shape[1] - 1) for p in positions})
        parted = np.partition(samples, kth, axis=1)
        return [parted[:, int(np.floor(p))] + (parted[:, min(int(np.floor(p)) + 1, samples.shape[1] - 1)] - parted[:, int(np.floor(p))]) * (p - np.floor(p)) for p in positions]
    ordered = np.sort(samples, axis=1)  # NaN sort last
    valid = (~np.isnan(ordered)).sum(axis=1)
    out = []
    for q in qs:
        pos = np.clip(q / 100.0 * (valid - 1), 0, None)
        low = np.floor(pos).astype(int)
        high = np.minimum(low + 1, np.maximum(valid - 1, 0))
        frac = pos - low
        a = np.take_along_axis(ordered, low[:, None], axis=1)[:, 0]
        b = np.take_along_axis(ordered, high[:, None], axis=1)[:, 0]
        out.append(np.where(valid > 0, a + (b - a) * frac, np.nan))
    return out


def rater_bootstrap(frame: pd.DataFrame, key: str, *, rounds: int, seed: int) -> pd.DataFrame:
    """Percentile 95 % intervals of each group's mean, resampling raters with replacement (all their ratings travel together).

    A round draws every rater a multinomial count; a group's mean is its raters' weighted sums over
    their weighted counts. The (group x rater) tables are sparse, so a round costs one pass over the ratings.
    """
    from scipy import sparse

    rows = []
    for dim, part in frame.groupby("dimension", sort=True):
        raters, r_idx = np.unique(part["annotator_id"].to_numpy(), return_inverse=True)
        groups, g_idx = np.unique(part[key].to_numpy(), return_inverse=True)
        shape = (len(groups), len(raters))
        sums = sparse.csr_matrix((part["value"].to_numpy(dtype=float), (g_idx, r_idx)), shape=shape)
        counts = sparse.csr_matrix((np.ones(len(part)), (g_idx, r_idx)), shape=shape)
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(len(raters), np.full(len(raters), 1.0 / len(raters)), size=max(rounds, 1)).T.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.asarray(sums @ weights) / np.asarray(counts @ weights)
        low, high = _percentiles(means, (2.5, 97.5))
        rows.append(pd.DataFrame({key: groups, "dimension": dim, "boot_low": low, "boot_high": high}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=[key, "dimension", "boot_low", "boot_high"])


# --- Agreement ------------------------------------------------------------------------------------------


def krippendorff_alpha(frame: pd.DataFrame, level: str) -> float | None:
    """Krippendorff's alpha over clips (units) for one dimension's ratings, from value counts."""
    if frame.empty:
        return None
    domain = np.sort(frame["value"].unique())
    if len(domain) < 2:
        return None
    units, u_idx = np.unique(frame["clip_id"].to_numpy(), return_inverse=True)
    v_idx = np.searchsorted(domain, frame["value"].to_numpy())
    counts = np.zeros((len(units), len(domain)))
    np.add.at(counts, (u_idx, v_idx), 1.0)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0:
        return None
    return num(krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level))


def icc2k(matrix: np.ndarray) -> dict:
    """ICC(2,1) and ICC(2,k) of a complete targets x raters matrix (Shrout & Fleiss 1979, case 2)."""
    x = np.asarray(matrix, dtype=float)
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_err = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    bms, jms, ems = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    single = (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
    average = (bms - ems) / (bms + (jms - ems) / n)
    return {"icc2_1": float(single), "icc2_k": float(average), "k": int(k), "n": int(n)}


def icc_block(frame: pd.DataFrame) -> dict | None:
    """ICC(2,k) on the largest complete block: the k raters (k = the commonest number of ratings per
    clip) with the most ratings, over the clips all of them rated. None when fewer than 3 clips remain."""
    if frame.empty:
        return None
    per_clip = frame.groupby("clip_id")["annotator_id"].nunique()
    k = int(per_clip.mode().iloc[0]) if len(per_clip) else 0
    if k < 2:
        return None
    top = frame["annotator_id"].value_counts().index[:k]
    block = frame[frame["annotator_id"].isin(top)].pivot_table(index="clip_id", columns="annotator_id", values="value", aggfunc="mean").dropna()
    if len(block) < 3 or block.shape[1] < 2:
        return None
    return icc2k(block.to_numpy())


def rater_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per rater and dimension: ratings, bias against the leave-one-out clip MOS, and consistency (Pearson r with it)."""
    parts = []
    for dim, part in frame.groupby("dimension", sort=True):
        sums = part.groupby("clip_id")["value"].transform("sum")
        counts = part.groupby("clip_id")["value"].transform("count")
        loo = (sums - part["value"]) / (counts - 1)
        scored = part.assign(loo=loo.where(counts > 1)).dropna(subset=["loo"])
        scored = scored.assign(diff=scored["value"] - scored["loo"])
        # Pearson r per rater from grouped sums (no per-rater loop).
        sums = scored.assign(x2=scored["value"] ** 2, y2=scored["loo"] ** 2, xy=scored["value"] * scored["loo"]).groupby("annotator_id").agg(
            n=("value", "count"), bias=("diff", "mean"), x=("value", "sum"), y=("loo", "sum"), x2=("x2", "sum"), y2=("y2", "sum"), xy=("xy", "sum")
        )
        cov = sums["xy"] - sums["x"] * sums["y"] / sums["n"]
        vx, vy = sums["x2"] - sums["x"] ** 2 / sums["n"], sums["y2"] - sums["y"] ** 2 / sums["n"]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = cov / np.sqrt(vx * vy)
        table = sums[["n", "bias"]].reset_index()
        table["consistency"] = [float(v) if n >= 3 and vxx > 1e-12 and vyy > 1e-12 else None for v, n, vxx, vyy in zip(r, sums["n"], vx, vy)]
        table["dimension"] = dim
        parts.append(table)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["annotator_id", "n", "bias", "consistency", "dimension"])


# --- Quality control ---------------------------------------------------------------------------------------


def gold_checks(frame: pd.DataFrame) -> pd.DataFrame:
    """Per rater: gold and trap ratings seen and failed (a value outside the item's expected range)."""
    checked = frame[frame["expected_low"].notna() & frame["kind"].isin(["gold", "trap"])]
    if checked.empty:
        return pd.DataFrame(columns=["annotator_id", "gold_seen", "gold_failed", "trap_seen", "trap_failed"])
    failed = (checked["value"] < checked["expected_low"]) | (checked["value"] > checked["expected_high"])
    # One check per submission: failed if any of its checked ratings is outside the range.
    per_submission = checked.assign(failed=failed).groupby(["annotator_id", "kind", "submission_id"])["failed"].any().reset_index()
    table = per_submission.groupby(["annotator_id", "kind"])["failed"].agg(seen="count", failed="sum").unstack("kind", fill_value=0)
    out = pd.DataFrame({"annotator_id": table.index})
    for kind in ("gold", "trap"):
        out[f"{kind}_seen"] = table[("seen", kind)].to_numpy(dtype=int) if ("seen", kind) in table.columns else 0
        out[f"{kind}_failed"] = table[("failed", kind)].to_numpy(dtype=int) if ("failed", kind) in table.columns else 0
    return out[["annotator_id", "gold_seen", "gold_failed", "trap_seen", "trap_failed"]]


def post_screening(frame: pd.DataFrame, *, share: float = SCREEN_SHARE) -> pd.DataFrame:
    """ITU-R BS.1534-3 post-screening per assessor over multi-stimulus trials (one trial = one submission and dimension)."""
    columns = ["annotator_id", "trials_with_reference", "reference_below_90", "trials_with_anchor", "anchor_above_90", "flagged"]
    ref = frame[frame["role"] == "reference"].assign(bad=lambda f: f["value"] < SCREEN_REFERENCE_BELOW)
    anc = frame[frame["role"] == "anchor"].assign(bad=lambda f: f["value"] > SCREEN_ANCHOR_ABOVE)
    raters = sorted(set(ref["annotator_id"]) | set(anc["annotator_id"]))
    rows = []
    for rater in raters:
        r, a = ref[ref["annotator_id"] == rater], anc[anc["annotator_id"] == rater]
        r_bad, a_bad = int(r["bad"].sum()), int(a["bad"].sum())
        flagged = (len(r) > 0 and r_bad / len(r) > share) or (len(a) > 0 and a_bad / len(a) > share)
        rows.append({"annotator_id": rater, "trials_with_reference": len(r), "reference_below_90": r_bad, "trials_with_anchor": len(a), "anchor_above_90": a_bad, "flagged": bool(flagged)})
    return pd.DataFrame(rows, columns=columns)


# --- Judges against humans ----------------------------------------------------------------------------------


def correlations(x: np.ndarray, y: np.ndarray) -> dict:
    """LCC, SRCC and Kendall tau-b of two complete arrays (scipy); None below three values or on a constant input."""
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return {"lcc": None, "srcc": None, "ktau": None, "n": int(len(x))}
    return {
        "lcc": float(np.corrcoef(x, y)[0, 1]),
        "srcc": float(sps.spearmanr(x, y).statistic),
        "ktau": float(sps.kendalltau(x, y).statistic),
        "n": int(len(x)),
    }


# Kendall's tau over thousands of clips is O(n log n) per resample in scipy, not vectorised here: its
# clip-level interval uses at most this many resamples (LCC and SRCC use all of them).
KENDALL_CLIP_ROUNDS = 100


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r per row of the weights (rounds x n): the correlation of the resample that repeats item i w[r, i] times.

    x and y are one row for every round (then matrix-vector products, no temporaries) or a row per round."""
    total = w.sum(axis=1)
    if x.ndim == 1 and y.ndim == 1:
        sx, sy, sxx, syy, sxy = w @ x, w @ y, w @ (x * x), w @ (y * y), w @ (x * y)
    else:
        wx, wy = w * x, w * y
        sx, sy = wx.sum(axis=1), wy.sum(axis=1)
        sxx, syy, sxy = np.einsum("ij,ij->i", wx, x), np.einsum("ij,ij->i", wy, y), np.einsum("ij,ij->i", wx, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sxy - sx * sy / total) / np.sqrt((sxx - sx * sx / total) * (syy - sy * sy / total))


def _rank_groups(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per resample (a row of multiplicities each): the average rank (1-based, ties averaged) of each distinct value
    of x and the weight it carries (rounds x values), and each item's value index.

    A value's weight per round is a product with the items' one-hot levels (few distinct values, as a MOS on a 1-5
    scale) or, with many, a sum over its contiguous run once the columns are in value order; its rank is the weight
    below it plus the average place within its ties."""
    values, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.reshape(-1)
    if 8 * len(values) < len(inverse):
        group = w @ _onehot(inverse, len(values))
    else:
        order = np.argsort(inverse, kind="stable")
        group = w[:, order]
        if len(values) < len(inverse):
            starts = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(values)))[:-1]))
            group = np.add.reduceat(group, starts, axis=1)
    ranks = np.cumsum(group, axis=1)
    ranks -= (group - 1) / 2
    return ranks, group, inverse


def _onehot(codes: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(codes), width))
    out[np.arange(len(codes)), codes] = 1.0
    return out


def _weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) of each item within each weighted resample (rounds x n)."""
    ranks, _, inverse = _rank_groups(x, w)
    return ranks[:, inverse]


def _tau_b_small(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per row of (rounds x k) arrays with few columns (systems): all pairs at once."""
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))


@functools.lru_cache(maxsize=4)
def clip_resamples(n: int, *, rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`rounds` resamples of n clips with replacement: the drawn indices (rounds x n) and each clip's multiplicity per round.

    The same (n, rounds, seed) gives the same resamples, so they are drawn once and shared (read-only) by every judge
    and dimension of a report."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(rounds, n))
    weights = np.bincount((draws + np.arange(rounds)[:, None] * n).ravel(), minlength=rounds * n).reshape(rounds, n).astype(float)
    draws.setflags(write=False)
    weights.setflags(write=False)
    return draws, weights


def weighted_srcc(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman's rho per resample (a row of multiplicities each): Pearson r of the resample's average ranks.

    The ranks of N drawn items sum to N(N+1)/2 whatever the ties, and their squares are a sum over distinct values, so
    only the cross term needs a pass over the items."""
    rx, gx, ix = _rank_groups(x, weights)
    ry, gy, iy = _rank_groups(y, weights)
    if gy.shape[1] > gx.shape[1]:
        x, rx, gx, ix, y, ry, gy, iy = y, ry, gy, iy, x, rx, gx, ix
    total = weights.sum(axis=1)
    centre = total * ((total + 1) / 2) ** 2
    sxx = np.einsum("ij,ij,ij->i", gx, rx, rx) - centre
    syy = np.einsum("ij,ij,ij->i", gy, ry, ry) - centre
    if gy.shape[1] <= 256:
        # y has few levels: sum w * rank_x per level of y (one matrix product), then against y's ranks. With every x
        # distinct, gx already holds the weights in x's order and rx the matching ranks.
        if gx.shape[1] == len(x):
            order = np.argsort(ix)
            per_level = (gx * rx) @ _onehot(iy[order], gy.shape[1])
        else:
            per_level = (weights * rx[:, ix]) @ _onehot(iy, gy.shape[1])
        sxy = np.einsum("ij,ij->i", per_level, ry) - centre
    else:
        sxy = np.einsum("ij,ij,ij->i", weights, rx[:, ix], ry[:, iy]) - centre
    with np.errstate(invalid="ignore", divide="ignore"):
        return sxy / np.sqrt(sxx * syy)


def _interval(values) -> list | None:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return [num(np.percentile(values, 2.5)), num(np.percentile(values, 97.5))] if len(values) else None


def correlations_with_intervals(pred, truth, *, groups=None, rounds: int = 1000, seed: int = 0) -> dict:
    """LCC, SRCC and Kendall's tau-b with 95 % percentile intervals from resampling clips.

    With `groups` (a system per clip) the figures are at system level: per round the resampled
    clips' predictions and MOS are averaged per system before correlating. A resample is a row of
    multiplicities (how often each clip was drawn), so every round is computed at once.
    """
    pred, truth = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    keep = ~(np.isnan(pred) | np.isnan(truth))
    pred, truth = pred[keep], truth[keep]
    n = len(pred)
    if groups is not None:
        labels, codes = np.unique(np.asarray(groups)[keep].astype(str), return_inverse=True)
        onehot = np.zeros((n, len(labels)))
        onehot[np.arange(n), codes] = 1.0
        per = onehot.sum(axis=0)
        point = correlations((pred @ onehot) / per, (truth @ onehot) / per)
    else:
        point = correlations(pred, truth)
    if point["lcc"] is None or rounds <= 0:
        return {**{k: (num(v) if k != "n" else v) for k, v in point.items()}, "intervals": None}
    draws, weights = clip_resamples(n, rounds=rounds, seed=seed)
    if groups is None:
        lcc = _weighted_pearson(pred, truth, weights)
        srcc = weighted_srcc(pred, truth, weights)
        ktau = [sps.kendalltau(pred[d], truth[d]).statistic for d in draws[:KENDALL_CLIP_ROUNDS]]
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            counts = weights @ onehot
            mp, mt = (weights * pred) @ onehot / counts, (weights * truth) @ onehot / counts
        ok = ~(np.isnan(mp).any(axis=1) | np.isnan(mt).any(axis=1))
        mp, mt = mp[ok], mt[ok]
        ones = np.ones_like(mp)
        lcc = _weighted_pearson(mp, mt, ones)
        srcc = _weighted_pearson(sps.rankdata(mp, axis=1), sps.rankdata(mt, axis=1), ones)
        ktau = _tau_b_small(mp, mt)
    intervals = {"lcc": _interval(lcc), "srcc": _interval(srcc), "ktau": _interval(ktau)}
    return {**{k: (num(v) if k != "n" else v) for k, v in point.items()}, "intervals": intervals}


def judges_vs_humans(clip_mos: pd.DataFrame, judge_scores: pd.DataFrame, *, rounds: int, seed: int) -> list[dict]:
    """Per judge and dimension: clip-level and system-level correlations of judge scores with MOS.

    clip_mos: clip_id, system, dimension, mos. judge_scores: judge, clip_id, dimension, score.
    """
    out = []
    if judge_scores.empty or clip_mos.empty:
        return out
    merged = judge_scores.merge(clip_mos, on=["clip_id", "dimension"], how="inner")
    for (judge, dim), part in merged.groupby(["judge", "dimension"], sort=True):
        part = part.sort_values("clip_id")
        out.append({
            "judge": judge,
            "dimension": dim,
            "clip": correlations_with_intervals(part["score"], part["mos"], rounds=rounds, seed=seed),
            "system": correlations_with_intervals(part["score"], part["mos"], groups=part["system"].fillna(""), rounds=rounds, seed=seed),
        })
    return out


# --- Many judges on the same rated clips (MOS benchmarks) -----------------------------------------------------


def compare_correlations(scores, truth, *, rounds: int, seed: int, alpha: float = 0.05) -> dict:
    """SRCC of S judges' clip scores (S x n, NaN where a judge gave none) with the clips' MOS (n), ranked.

    A missing score ranks below every score the judge gave (all missing clips tie at the bottom), so leaving a clip out
    never helps. One set of clip resamples serves every judge: "ci" is each judge's 95 % percentile interval,
    "p" the paired bootstrap test of every two judges (Holm-adjusted, scoring.stats.paired_tests) and "rank" 1 + the
    number of judges significantly better (scoring.stats.significance_groups), as the pairwise leaderboard ranks.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    truth = np.asarray(truth, dtype=float)
    n_sub, n = scores.shape
    answered = (~np.isnan(scores)).sum(axis=1)
    filled = scores.copy()
    for s in range(n_sub):
        given = filled[s][~np.isnan(filled[s])]
        filled[s][np.isnan(filled[s])] = (given.min() - 1.0) if given.size else 0.0
    point = np.array([correlations(row, truth)["srcc"] if n else None for row in filled], dtype=float)
    out = {"n": int(n), "srcc": [num(v) for v in point], "answered": [int(a) for a in answered], "ci": None, "p": None}
    if rounds > 0 and n >= 3 and n_sub:
        _, weights = clip_resamples(n, rounds=rounds, seed=seed)
        boot = np.stack([weighted_srcc(row, truth, weights) for row in filled], axis=1)  # rounds x S
        out["ci"] = [percentile_ci(boot[:, s]) if np.isfinite(point[s]) else None for s in range(n_sub)]
        tests = paired_tests(np.nan_to_num(boot, nan=0.0), alpha=alpha)
        out["p"] = tests["p"].tolist()
        out["rank"] = [int(r) for r in significance_groups(np.nan_to_num(point, nan=-2.0), tests["significant"])]
    else:
        ranked = np.nan_to_num(point, nan=-2.0)
        out["rank"] = [int(r) for r in 1 + (ranked[None, :] > ranked[:, None]).sum(axis=1)]
    return out


def split_half_ceiling(clip, value, *, splits: int = 100, seed: int = 0) -> dict:
    """The human ceiling of a MOS benchmark: split-half rater correlation, Spearman-Brown corrected.

    Per split, each clip's ratings are shuffled and cut in two halves (sizes floor(k/2) and the rest); the SRCC of
    the halves' means across clips is averaged over `splits` seeded splits, then corrected to the full number of
    raters by Spearman-Brown (2r / (1 + r)). Clips with fewer than two ratings are left out. Returns {"srcc_half",
    "srcc" (corrected), "n" (clips), "splits"}; None figures below three clips.
    """
    clip, value = np.asarray(clip), np.asarray(value, dtype=float)
    n_clips = 0
    if len(clip):
        _, codes, counts = np.unique(clip, return_inverse=True, return_counts=True)
        keep = counts[codes.reshape(-1)] >= 2
        codes, value = np.unique(codes.reshape(-1)[keep], return_inverse=True)[1].reshape(-1), value[keep]
        n_clips = int(codes.max()) + 1 if codes.size else 0
    if n_clips < 3:
        return {"srcc_half": None, "srcc": None, "n": n_clips, "splits": 0}
    size = np.bincount(codes, minlength=n_clips)
    rng = np.random.default_rng(seed)
    halves = []
    for _ in range(splits):
        order = np.lexsort((rng.random(len(codes)), codes))
        place = np.empty(len(codes), dtype=int)
        starts = np.concatenate([[0], np.cumsum(size)[:-1]])
        place[order] = np.arange(len(codes)) - starts[codes[order]]
        first = place < size[codes] // 2
        a = np.bincount(codes[first], weights=value[first], minlength=n_clips) / np.bincount(codes[first], minlength=n_clips)
        b = np.bincount(codes[~first], weights=value[~first], minlength=n_clips) / np.bincount(codes[~first], minlength=n_clips)
        r = correlations(a, b)["srcc"]
        if r is not None:
            halves.append(r)
    if not halves:
        return {"srcc_half": None, "srcc": None, "n": n_clips, "splits": 0}
    half = float(np.mean(halves))
    corrected = 2 * half / (1 + half) if half > -1 else None
    return {"srcc_half": num(half), "srcc": num(corrected), "n": n_clips, "splits": len(halves)}


# --- The section ----------------------------------------------------------------------------------------------


def screened(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, set]:
    """(regular items' rated clips from raters that pass, post-screening table, gold table, dropped raters): flagged
    raters and raters who failed a trap are left out of every MOS."""
    screening = post_screening(frame)
    gold = gold_checks(frame)
    flagged = set(screening.loc[screening["flagged"], "annotator_id"]) if len(screening) else set()
    trap_failed = set(gold.loc[gold["trap_failed"] > 0, "annotator_id"]) if len(gold) else set()
    dropped = flagged | trap_failed
    rated = frame[(frame["kind"] == "regular") & (frame["role"] == "test") & ~frame["annotator_id"].isin(dropped)]
    return rated, screening, gold, dropped


def _records(frame: pd.DataFrame) -> list[dict]:
    rounded = frame.round(4)
    return rounded.astype(object).where(rounded.notna(), None).to_dict("records")


def ratings_compute(frame: pd.DataFrame, *, judge_scores: pd.DataFrame | None = None, rounds: int = 1000, seed: int = 0) -> dict:
    """The ratings section from a frame of every rating of the study (no database): what the bench times.

    MOS and agreement use regular items' rated clips only, from raters that pass the post-screening;
    gold, trap, reference and anchor ratings feed the quality checks.
    """
    rated, screening, gold, dropped = screened(frame)
    clips = mos_by(rated, "clip_id").merge(rater_bootstrap(rated, "clip_id", rounds=rounds, seed=seed), on=["clip_id", "dimension"], how="left")
    systems_frame = rated.assign(system=rated["system"].fillna(""))
    systems = mos_by(systems_frame, "system").merge(rater_bootstrap(systems_frame, "system", rounds=rounds, seed=seed), on=["system", "dimension"], how="left")
    agreement = []
    for dim, part in rated.groupby("dimension", sort=True):
        agreement.append({
            "dimension": dim,
            "alpha_interval": krippendorff_alpha(part, "interval"),
            "alpha_ordinal": krippendorff_alpha(part, "ordinal"),
            "icc": icc_block(part),
        })
    clip_system = rated.drop_duplicates("clip_id").set_index("clip_id")["system"]
    clip_mos = clips[["clip_id", "dimension", "mos"]].assign(system=lambda f: f["clip_id"].map(clip_system))
    judges = judges_vs_humans(clip_mos, judge_scores if judge_scores is not None else pd.DataFrame(), rounds=rounds, seed=seed)
    return {
        "ratings": int(len(rated)),
        "raters": int(rated["annotator_id"].nunique()),
        "clips": int(rated["clip_id"].nunique()),
        "dropped_raters": sorted(int(r) for r in dropped),
        "mos_clips": _records(clips),
        "mos_systems": _records(systems.sort_values(["dimension", "mos"], ascending=[True, False])),
        "agreement": agreement,
        "raters_table": _records(rater_table(rated)),
        "gold": _records(gold),
        "post_screening": _records(screening),
        "judges": judges,
    }
