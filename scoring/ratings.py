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

from .resampled import (
    KENDALL_CLIP_ROUNDS,
    ClipResamples,
    _linear_rows,
    _one_blas_thread,
    _pearson_from_sums,
    _resampled_kendall,
    _rowwise_pearson,
    _tau_b_small,
    clip_resamples,
    weighted_srcc,
)
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


def _percentiles(samples: np.ndarray, qs: tuple[float, ...], *, overwrite: bool = False) -> list[np.ndarray]:
    """Row-wise percentiles (linear interpolation, as np.percentile) ignoring NaN, without nanpercentile's per-row loop.

    overwrite=True lets it reorder the values within each row of `samples` instead of copying them (a bootstrap's
    table of thousands of rows is the largest array of the report)."""
    rows, m = samples.shape
    out = [np.full(rows, np.nan) for _ in qs]
    gaps = np.isnan(samples).any(axis=1) if m else np.ones(rows, dtype=bool)
    if not gaps.all():
        # The two order statistics around each percentile from one partition (a single kth is several times faster
        # than a list of them), the neighbour as the extreme of the smaller side. A partition only reorders each row,
        # so the next one still finds its order statistics; rows with a gap are redone below.
        parted = samples if overwrite else samples.copy()
        for q, values in zip(qs, out):
            p = q / 100.0 * (m - 1)
            low, high = int(np.floor(p)), min(int(np.floor(p)) + 1, m - 1)
            if high <= (m - 1) / 2:
                parted.partition(high, axis=1)
                b = parted[:, high]
                a = parted[:, :high].max(axis=1) if low < high else b
            else:
                parted.partition(low, axis=1)
                a = parted[:, low]
                b = parted[:, high:].min(axis=1) if low < high else a
            values[:] = a + (b - a) * (p - np.floor(p))
    if gaps.any():
        ordered = np.sort(samples[gaps], axis=1)  # NaN sort last
        valid = (~np.isnan(ordered)).sum(axis=1)
        for q, values in zip(qs, out):
            pos = np.clip(q / 100.0 * (valid - 1), 0, None)
            low = np.floor(pos).astype(int)
            high = np.minimum(low + 1, np.maximum(valid - 1, 0))
            frac = pos - low
            a = np.take_along_axis(ordered, low[:, None], axis=1)[:, 0]
            b = np.take_along_axis(ordered, high[:, None], axis=1)[:, 0]
            values[gaps] = np.where(valid > 0, a + (b - a) * frac, np.nan)
    return out


@functools.lru_cache(maxsize=4)
def rater_resamples(raters: int, *, rounds: int, seed: int) -> np.ndarray:
    """Each rater's multiplicity in each of `rounds` resamples of `raters` raters with replacement (raters x rounds,
    read-only): drawn once per report and shared by every dimension and grouping."""
    rng = np.random.default_rng(seed)
    # C order: a sparse product takes its dense operand flat and would copy a transposed view on every call.
    weights = np.ascontiguousarray(rng.multinomial(raters, np.full(raters, 1.0 / raters), size=max(rounds, 1)).T, dtype=float)
    weights.setflags(write=False)
    return weights


def rater_bootstrap(frame: pd.DataFrame, key: str, *, rounds: int, seed: int) -> pd.DataFrame:
    """Percentile 95 % intervals of each group's mean, resampling raters with replacement (all their ratings travel together).

    A round draws every rater a multinomial count; a group's mean is its raters' weighted sums over
    their weighted counts. The (group x rater) tables are sparse, so a round costs one pass over the ratings.
    """
    from scipy import sparse

    rows = []
    for dim, part in frame.groupby("dimension", sort=True):
        # Sorted codes as np.unique's, by hashing (np.unique sorts every rating, strings slowly).
        r_idx, raters = pd.factorize(part["annotator_id"], sort=True, use_na_sentinel=False)
        g_idx, groups = pd.factorize(part[key], sort=True, use_na_sentinel=False)
        shape = (len(groups), len(raters))
        sums = sparse.csr_matrix((part["value"].to_numpy(dtype=float), (g_idx, r_idx)), shape=shape)
        counts = sparse.csr_matrix((np.ones(len(part)), (g_idx, r_idx)), shape=shape)
        weights = rater_resamples(len(raters), rounds=rounds, seed=seed)
        low, high = np.empty(len(groups)), np.empty(len(groups))
        # A few hundred groups at a time: each block of means (groups x rounds) stays in cache from the products to
        # the percentiles, and is small enough to be reused rather than mapped afresh.
        for start in range(0, len(groups), 512):
            block = slice(start, start + 512)
            means = np.asarray(sums[block] @ weights)
            with np.errstate(invalid="ignore", divide="ignore"):
                np.divide(means, np.asarray(counts[block] @ weights), out=means)
            low[block], high[block] = _percentiles(means, (2.5, 97.5), overwrite=True)
        groups = groups.to_numpy()
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
        by_clip = part.groupby("clip_id")["value"]
        sums, counts = by_clip.transform("sum"), by_clip.transform("count")
        value = part["value"]
        loo = ((sums - value) / (counts - 1)).where(counts > 1)
        keep = loo.notna().to_numpy()
        x, y = value.to_numpy()[keep], loo.to_numpy()[keep]
        # Pearson r per rater from grouped sums (no per-rater loop), all of them in one grouped sum; the mean
        # difference is its sum over the count, as pandas' mean computes it.
        columns = pd.DataFrame({"n": np.ones(len(x)), "diff": x - y, "x": x, "y": y, "x2": x**2, "y2": y**2, "xy": x * y})
        sums = columns.groupby(part["annotator_id"].to_numpy()[keep]).sum()
        n = sums["n"]
        cov = sums["xy"] - sums["x"] * sums["y"] / n
        vx, vy = sums["x2"] - sums["x"] ** 2 / n, sums["y2"] - sums["y"] ** 2 / n
        with np.errstate(invalid="ignore", divide="ignore"):
            r = cov / np.sqrt(vx * vy)
        table = pd.DataFrame({"annotator_id": sums.index.to_numpy(), "n": n.to_numpy(dtype=np.int64), "bias": (sums["diff"] / n).to_numpy()})
        table["consistency"] = [float(v) if k >= 3 and a > 1e-12 and b > 1e-12 else None for v, k, a, b in zip(r, n, vx, vy)]
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


def _interval(values) -> list | None:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return [num(np.percentile(values, 2.5)), num(np.percentile(values, 97.5))] if len(values) else None


def _figures(point: dict, intervals: dict | None) -> dict:
    return {**{k: (num(v) if k != "n" else v) for k, v in point.items()}, "intervals": intervals}


def judge_correlations(pred, truth, *, groups=None, clip: bool = True, rounds: int = 1000, seed: int = 0) -> dict:
    """LCC, SRCC and Kendall's tau-b of a judge's clip scores with the MOS, with 95 % percentile intervals from
    resampling clips: {"clip": ...} (unless clip=False) and, with `groups` (a system per clip), {"system": ...}, where
    per round the resampled clips' predictions and MOS are averaged per system before correlating.

    Both levels share the resamples; every linear sum of every round (the clip-level Pearson sums and the per-system
    counts and sums) is one matrix product with the multiplicities."""
    pred, truth = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    keep = ~(np.isnan(pred) | np.isnan(truth))
    pred, truth = pred[keep], truth[keep]
    n = len(pred)
    out, rows = {}, []
    if clip:
        out["clip"] = correlations(pred, truth)
        if out["clip"]["lcc"] is not None and rounds > 0:
            rows.append(_linear_rows(pred, truth))
    if groups is not None:
        labels, codes = np.unique(np.asarray(groups)[keep].astype(str), return_inverse=True)
        onehot = np.zeros((len(labels), n))
        onehot[codes.reshape(-1), np.arange(n)] = 1.0
        per = onehot.sum(axis=1)
        out["system"] = correlations((onehot @ pred) / per, (onehot @ truth) / per)
        if out["system"]["lcc"] is not None and rounds > 0:
            rows.append(np.vstack([onehot, onehot * pred, onehot * truth]))
    if not rows:
        return {level: _figures(point, None) for level, point in out.items()}
    resamples = clip_resamples(n, rounds=rounds, seed=seed)
    with _one_blas_thread():
        return _judge_intervals(out, rows, pred, truth, resamples, clip=clip, grouped=groups is not None)


def _judge_intervals(out: dict, rows: list, pred: np.ndarray, truth: np.ndarray, resamples: ClipResamples, *, clip: bool, grouped: bool) -> dict:
    sums = np.vstack(rows) @ resamples.weights
    result = {}
    if clip:
        if out["clip"]["lcc"] is not None:
            linear, sums = sums[:6], sums[6:]
            lcc = _pearson_from_sums(*linear)
            srcc = weighted_srcc(pred, truth, resamples)
            ktau = _resampled_kendall(pred, truth, resamples.counts[:, :KENDALL_CLIP_ROUNDS])
            result["clip"] = _figures(out["clip"], {"lcc": _interval(lcc), "srcc": _interval(srcc), "ktau": _interval(ktau)})
        else:
            result["clip"] = _figures(out["clip"], None)
    if grouped:
        if out["system"]["lcc"] is not None:
            counts, sp, st = np.split(sums.T, 3, axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                mp, mt = sp / counts, st / counts
            ok = ~(np.isnan(mp).any(axis=1) | np.isnan(mt).any(axis=1))
            mp, mt = mp[ok], mt[ok]
            lcc = _rowwise_pearson(mp, mt)
            srcc = _rowwise_pearson(sps.rankdata(mp, axis=1), sps.rankdata(mt, axis=1))
            result["system"] = _figures(out["system"], {"lcc": _interval(lcc), "srcc": _interval(srcc), "ktau": _interval(_tau_b_small(mp, mt))})
        else:
            result["system"] = _figures(out["system"], None)
    return result


def correlations_with_intervals(pred, truth, *, groups=None, rounds: int = 1000, seed: int = 0) -> dict:
    """LCC, SRCC and Kendall's tau-b with 95 % percentile intervals from resampling clips; with `groups` (a system per
    clip) at system level (judge_correlations)."""
    level = "clip" if groups is None else "system"
    return judge_correlations(pred, truth, groups=groups, clip=groups is None, rounds=rounds, seed=seed)[level]


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
        figures = judge_correlations(part["score"], part["mos"], groups=part["system"].fillna(""), rounds=rounds, seed=seed)
        out.append({"judge": judge, "dimension": dim, "clip": figures["clip"], "system": figures["system"]})
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
        resamples = clip_resamples(n, rounds=rounds, seed=seed)
        boot = np.stack([weighted_srcc(row, truth, resamples) for row in filled], axis=1)  # rounds x S
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
    cells = rounded.astype(object).where(rounded.notna(), None)
    # The rows from the columns' Python lists: what to_dict("records") returns (its per-cell boxing is a no-op on an
    # object frame), several times faster on thousands of rows.
    columns = list(cells.columns)
    return [dict(zip(columns, row)) for row in zip(*(cells[c].tolist() for c in columns))]


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
