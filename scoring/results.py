"""Which system won: per-system results of a study, on frames (no database).

Pairwise studies: for every two systems, the win rate (ties as half a win each way) with a 95 %
interval that resamples conditions, a cluster-robust test of "no preference" with Holm's
correction over the study's comparisons, and Bradley–Terry strengths for all systems (the arena's
fit, arena.leaderboard.bt_fit) with intervals from the same condition resamples and ranks by
interval overlap. Rating studies: paired differences of system means on the conditions both were
rated on. Conditions are the clusters everywhere: votes on one prompt share it, so they are not
independent draws. docs/reports.md says what each figure assumes.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as sps

from arena.leaderboard import bt_fit

from .stats import cluster_draws, holm

LEVEL = 0.95
# Bradley–Terry's ridge, as the arena's board uses it: keeps a system that never lost finite.
RIDGE = 1e-4
# A group (a modality, a tag) gets its own results from this many votes on.
GROUP_MIN_VOTES = 20
DIMENSION_WORDS = {"alignment": "instruction following", "musicality": "musicality"}


# --- Outcomes ---------------------------------------------------------------------------


def oriented(frame: pd.DataFrame, dim: str, names: list[str]) -> dict:
    """One dimension's votes between two different systems, each as (first, second, score of first, condition, annotator).

    `frame` has columns system_a, system_b (of the pair's clip_a / clip_b), condition, annotator and
    score_<dim>: 1 when clip_a won, 0 when clip_b won, 0.5 for a tie, NaN when the vote names no
    winner on this dimension. Systems are ordered by their index in `names`, so every pair of
    systems is one (first, second) with first < second.
    """
    score = frame[f"score_{dim}"].to_numpy(float)
    index = {name: k for k, name in enumerate(names)}
    a = frame["system_a"].map(index).to_numpy()
    b = frame["system_b"].map(index).to_numpy()
    keep = ~np.isnan(score) & ~pd.isna(a) & ~pd.isna(b)
    a, b, score = a[keep].astype(np.int64), b[keep].astype(np.int64), score[keep]
    keep2 = a != b
    a, b, score = a[keep2], b[keep2], score[keep2]
    flip = a > b
    first, second = np.where(flip, b, a), np.where(flip, a, b)
    weights = frame["weight"].to_numpy(float)[keep][keep2] if "weight" in frame else np.ones(len(score))
    return {
        "first": first,
        "second": second,
        "score": np.where(flip, 1.0 - score, score),
        "condition": frame["condition"].to_numpy()[keep][keep2],
        "weight": weights,
        "names": names,
    }


def _cells(votes: dict) -> dict:
    """Sums per (condition, system pair): the clusters the resamples draw."""
    n = len(votes["names"])
    pairs = [(i, j) for i, j in combinations(range(n), 2)]
    pair_code = {p: k for k, p in enumerate(pairs)}
    cond_codes, cond_names = pd.factorize(pd.Series(votes["condition"]))
    codes = np.array([pair_code[(i, j)] for i, j in zip(votes["first"], votes["second"])], dtype=np.int64)
    n_cond = len(cond_names)
    flat = cond_codes * len(pairs) + codes
    w = votes["weight"]
    size = len(pairs) * n_cond
    return {
        "pairs": pairs,
        "n_cond": n_cond,
        "wins": np.bincount(flat, weights=w * votes["score"], minlength=size).reshape(n_cond, len(pairs)),
        "games": np.bincount(flat, weights=w, minlength=size).reshape(n_cond, len(pairs)),
        "votes": np.bincount(codes, minlength=len(pairs)),
        "ties": np.bincount(codes, weights=(votes["score"] == 0.5).astype(float), minlength=len(pairs)).astype(np.int64),
        "won": np.bincount(codes, weights=(votes["score"] == 1.0).astype(float), minlength=len(pairs)).astype(np.int64),
        "conditions": np.bincount(codes[np.unique(flat, return_index=True)[1]], minlength=len(pairs)),
    }


def _resampled(cells: dict, *, rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, pairs) wins and games of each condition resample."""
    wins = np.empty((rounds, len(cells["pairs"])))
    games = np.empty_like(wins)
    for start, counts in cluster_draws(cells["n_cond"], rounds=rounds, seed=seed):
        counts = counts.astype(np.float64)
        wins[start : start + len(counts)] = counts @ cells["wins"]
        games[start : start + len(counts)] = counts @ cells["games"]
    return wins, games


def cluster_test(wins: np.ndarray, games: np.ndarray) -> tuple[float, float, int]:
    """Two-sided test of a win rate of one half, conditions as clusters: (rate, p, conditions).

    wins, games: per condition, one system pair. The rate is a ratio estimator; its variance is the
    cluster-robust (sandwich) one with the small-sample factor C/(C-1), referred to Student's t with
    C-1 degrees of freedom. The planner (scoring/planner.py) runs this same test on simulated studies.
    """
    used = games > 0
    wins, games = wins[used], games[used]
    c = len(games)
    total = games.sum()
    if c == 0 or total <= 0:
        return float("nan"), float("nan"), 0
    rate = wins.sum() / total
    if c < 2:
        return float(rate), float("nan"), c
    resid = wins - rate * games
    var = (c / (c - 1)) * float((resid**2).sum()) / total**2
    if var <= 0:
        return float(rate), (0.0 if rate != 0.5 else 1.0), c
    t = (rate - 0.5) / np.sqrt(var)
    return float(rate), float(2 * sps.t.sf(abs(t), df=c - 1)), c


def _percentiles(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    tail = 100 * (1 - LEVEL) / 2
    with warnings.catch_warnings():
        # A pair no resample drew has no interval: NaN, shown as none.
        warnings.simplefilter("ignore", RuntimeWarning)
        lower, upper = np.nanpercentile(samples, [tail, 100 - tail], axis=0)
    return lower, upper


# --- Pairwise results -------------------------------------------------------------------


def pairwise_results(votes: dict, *, rounds: int, seed: int) -> dict:
    """Win rates per pair of systems and Bradley–Terry strengths, with condition-resampled intervals."""
    names = votes["names"]
    n = len(names)
    if n < 2 or len(votes["score"]) == 0:
        return {"votes": int(len(votes["score"])), "pairs": [], "strengths": []}
    cells = _cells(votes)
    pairs = cells["pairs"]
    wins_total, games_total = cells["wins"].sum(axis=0), cells["games"].sum(axis=0)
    boot_wins, boot_games = _resampled(cells, rounds=rounds, seed=seed) if rounds > 0 else (np.empty((0, len(pairs))),) * 2
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_rate = boot_wins / boot_games
    lower, upper = _percentiles(boot_rate) if rounds > 0 else (np.full(len(pairs), np.nan),) * 2
    tests = [cluster_test(cells["wins"][:, k], cells["games"][:, k]) for k in range(len(pairs))]
    played = [k for k in range(len(pairs)) if cells["votes"][k] > 0]
    p_values = np.array([tests[k][1] for k in played], dtype=float)
    adjusted = np.full(len(pairs), np.nan)
    finite = ~np.isnan(p_values)
    if finite.any():
        adjusted[np.array(played)[finite]] = holm(p_values[finite])
    pair_rows = []
    for k in played:
        i, j = pairs[k]
        pair_rows.append(
            {
                "system_a": names[i],
                "system_b": names[j],
                "votes": int(cells["votes"][k]),
                "wins_a": int(cells["won"][k]),
                "ties": int(cells["ties"][k]),
                "wins_b": int(cells["votes"][k] - cells["won"][k] - cells["ties"][k]),
                "conditions": int(cells["conditions"][k]),
                # Weighted votes from annotators at chance weigh nothing: a pair can have votes and no weight.
                "win_rate_a": _round(wins_total[k] / games_total[k]) if games_total[k] > 0 else None,
                "lower": _round(lower[k]),
                "upper": _round(upper[k]),
                "p": _round(tests[k][1], 6),
                "p_holm": _round(adjusted[k], 6),
            }
        )
    strengths = _strengths(cells, names, boot_wins, boot_games)
    return {"votes": int(cells["votes"].sum()), "conditions": int(cells["n_cond"]), "rounds": rounds, "seed": seed, "pairs": pair_rows, "strengths": strengths}


def _strengths(cells: dict, names: list[str], boot_wins: np.ndarray, boot_games: np.ndarray) -> list[dict]:
    n = len(names)
    pair_i = np.array([p[0] for p in cells["pairs"]], dtype=np.int64)
    pair_j = np.array([p[1] for p in cells["pairs"]], dtype=np.int64)
    point = bt_fit(cells["wins"].sum(axis=0)[None], cells["games"].sum(axis=0)[None], pair_i, pair_j, n, ridge=RIDGE)[0]
    if len(boot_wins):
        lower, upper = _percentiles(bt_fit(boot_wins, boot_games, pair_i, pair_j, n, ridge=RIDGE))
    else:
        lower = upper = np.full(n, np.nan)
    played = np.zeros(n, dtype=np.int64)
    np.add.at(played, pair_i, cells["votes"])
    np.add.at(played, pair_j, cells["votes"])
    shown = [k for k in range(n) if played[k] > 0]
    rows = []
    for k in shown:
        # The arena's rule: a system's rank is one plus the number of systems whose interval lies wholly above its own.
        rank = 1 + sum(1 for m in shown if m != k and lower[m] > upper[k])
        rows.append({"system": names[k], "strength": _round(point[k]), "lower": _round(lower[k]), "upper": _round(upper[k]), "rank": rank, "votes": int(played[k])})
    rows.sort(key=lambda r: (r["rank"], -(r["strength"] or 0.0), r["system"]))
    return rows


def compare_systems(frame: pd.DataFrame, a: str, b: str, dim: str, *, rounds: int = 1000, seed: int = 0) -> dict:
    """System `a` against `b` on one dimension: win rate of a, its condition-resampled interval, the cluster test."""
    votes = oriented(frame, dim, [a, b])
    result = pairwise_results(votes, rounds=rounds, seed=seed)
    if not result["pairs"]:
        return {"system_a": a, "system_b": b, "dimension": dim, "votes": 0}
    row = result["pairs"][0]
    return {**row, "dimension": dim, "strengths": result["strengths"]}


def per_condition(frame: pd.DataFrame, a: str, b: str, dim: str) -> pd.DataFrame:
    """a's win rate on each condition where a met b: where they differ most, to listen to."""
    votes = oriented(frame, dim, [a, b])
    if not len(votes["score"]):
        return pd.DataFrame(columns=["condition", "votes", "win_rate_a"])
    table = pd.DataFrame({"condition": votes["condition"], "score": votes["score"]})
    out = table.groupby("condition")["score"].agg(votes="size", win_rate_a="mean").reset_index()
    out["distance"] = (out["win_rate_a"] - 0.5).abs()
    return out.sort_values(["distance", "votes"], ascending=False).drop(columns="distance")


def rating_per_condition(frame: pd.DataFrame, a: str, b: str, dim: str) -> pd.DataFrame:
    """Each condition where both systems were rated: their mean ratings and the difference, largest first."""
    part = frame[(frame["dimension"] == dim) & frame["system"].isin([a, b])]
    means = part.groupby(["condition", "system"])["value"].mean().unstack("system") if len(part) else pd.DataFrame()
    if a not in means or b not in means:
        return pd.DataFrame(columns=["condition", "mean_a", "mean_b", "difference"])
    out = pd.DataFrame({"mean_a": means[a], "mean_b": means[b]}).dropna().reset_index()
    out["difference"] = out["mean_a"] - out["mean_b"]
    return out.reindex(out["difference"].abs().sort_values(ascending=False, kind="stable").index)


def _round(value, digits: int = 4):
    if value is None or not np.isfinite(value):
        return None
    return round(float(value), digits)


# --- Sentences --------------------------------------------------------------------------


def _p_words(p, corrected: bool = True) -> str:
    if p is None:
        return "too few conditions for a test"
    # One comparison picked on its own (the compare page) is not corrected for the others.
    tail = "after Holm" if corrected else "for this comparison alone"
    if p < 0.001:
        return f"p < 0.001 {tail}"
    return f"p = {p:.3f} {tail}"


def pair_sentence(row: dict, dim: str, *, corrected: bool = True) -> str:
    """One sentence a paper could quote, winner first."""
    p = row["p_holm"] if corrected else row["p"]
    rate, lower, upper = row["win_rate_a"], row["lower"], row["upper"]
    winner, loser = row["system_a"], row["system_b"]
    if rate is None:
        return f"{winner} and {loser} met in {row['votes']} votes on {DIMENSION_WORDS.get(dim, dim)}, none of them carrying weight: no comparison."
    if rate < 0.5:
        winner, loser = loser, winner
        rate, lower, upper = 1 - rate, (None if upper is None else 1 - upper), (None if lower is None else 1 - lower)
    interval = f" [{100 * lower:.0f}, {100 * upper:.0f}]" if lower is not None and upper is not None else ""
    ties = f", {row['ties']} ties counted as half" if row["ties"] else ""
    verb = "beat" if (p is not None and p < 0.05) else "was preferred to" if rate != 0.5 else "tied with"
    return f"{winner} {verb} {loser} on {DIMENSION_WORDS.get(dim, dim)} in {100 * rate:.0f} % of {row['votes']} votes{interval}{ties}, {_p_words(p, corrected)}."


# --- Annotator weights ------------------------------------------------------------------


def reliability_weights(frame: pd.DataFrame, dim: str) -> pd.Series:
    """Each annotator's Dawid–Skene reliability on this dimension as a vote weight: 2r - 1, floored at 0 (chance counts nothing)."""
    from common.crowd import _codes, ds_fit

    score = frame[f"score_{dim}"]
    decided = frame[(score == 0.0) | (score == 1.0)]
    if decided.empty:
        return pd.Series(dtype=float)
    codes = _codes(pd.DataFrame({"task": decided["pair_id"].to_numpy(), "worker": decided["annotator"].to_numpy(), "label": decided[f"score_{dim}"].astype(np.int64).to_numpy()}))
    _, reliability = ds_fit(codes)
    return pd.Series(np.clip(2 * np.asarray(reliability) - 1, 0.0, 1.0), index=codes["worker_names"])


def _disagree(plain: dict, weighted: dict) -> bool:
    """The weighted analysis names another winner or another significance for some pair, or other ranks."""
    rows = {(r["system_a"], r["system_b"]): r for r in plain["pairs"]}
    for r in weighted["pairs"]:
        p = rows.get((r["system_a"], r["system_b"]))
        if p is None or p["win_rate_a"] is None or r["win_rate_a"] is None:
            continue
        if (p["win_rate_a"] > 0.5) != (r["win_rate_a"] > 0.5):
            return True
        if p["p_holm"] is not None and r["p_holm"] is not None and (p["p_holm"] < 0.05) != (r["p_holm"] < 0.05):
            return True
    # Ranks by interval overlap, not the points: two systems a hair apart swap points under any reweighting.
    return {s["system"]: s["rank"] for s in plain["strengths"]} != {s["system"]: s["rank"] for s in weighted["strengths"]}


# --- The section ------------------------------------------------------------------------


def _dimension(frame: pd.DataFrame, dim: str, names: list[str], *, rounds: int, seed: int, weighted: bool) -> dict:
    plain = pairwise_results(oriented(frame, dim, names), rounds=rounds, seed=seed)
    out = {**plain, "sentences": [pair_sentence(r, dim) for r in plain["pairs"]]}
    if weighted and len(frame):
        weights = reliability_weights(frame, dim)
        heavy = frame.assign(weight=frame["annotator"].map(weights).fillna(1.0).to_numpy(float))
        result = pairwise_results(oriented(heavy, dim, names), rounds=rounds, seed=seed)
        out["weighted"] = {**result, "sentences": [pair_sentence(r, dim) for r in result["pairs"]], "disagrees": _disagree(plain, result)}
    return out


def pairwise_section(frame: pd.DataFrame, *, dimensions: tuple[str, ...] = ("alignment", "musicality"), rounds: int = 1000, seed: int = 0, weighted: bool = True) -> dict:
    """The results section of a pairwise study: per dimension, overall, by modality and by each tag."""
    names = sorted(set(frame["system_a"].dropna()) | set(frame["system_b"].dropna())) if len(frame) else []
    section = {"kind": "pairwise", "systems": names, "level": LEVEL, "group_min_votes": GROUP_MIN_VOTES, "dimensions": {}}
    for dim in dimensions:
        entry = _dimension(frame, dim, names, rounds=rounds, seed=seed, weighted=weighted)
        groups = []
        for column in ("modality", "vocal", "language"):
            if column not in frame:
                continue
            for value, part in frame.groupby(column, sort=True):
                n = int(part[f"score_{dim}"].notna().sum())
                group = {"by": column, "value": str(value), "votes": n}
                if n >= GROUP_MIN_VOTES:
                    group.update(_dimension(part, dim, names, rounds=rounds, seed=seed, weighted=False))
                else:
                    group["note"] = f"fewer than {GROUP_MIN_VOTES} votes: no results"
                groups.append(group)
        entry["groups"] = groups
        section["dimensions"][dim] = entry
    return section


# --- Rating studies ---------------------------------------------------------------------


def rating_section(frame: pd.DataFrame, *, dimensions: list[str]) -> dict:
    """Paired differences between systems' mean ratings on the conditions both were rated on.

    `frame`: one row per rating with system, condition, dimension, value (test clips only). Each
    condition gives one difference per pair of systems (the difference of the two means there),
    so conditions are the units of the t-interval and the paired t-test; Holm over the pairs.
    """
    names = sorted(frame["system"].dropna().unique()) if len(frame) else []
    out = {"kind": "rating", "systems": names, "level": LEVEL, "dimensions": {}}
    for dim in dimensions:
        part = frame[frame["dimension"] == dim]
        means = part.groupby(["condition", "system"])["value"].mean().unstack("system") if len(part) else pd.DataFrame()
        rows = []
        for a, b in combinations(names, 2):
            if a not in means or b not in means:
                continue
            d = (means[a] - means[b]).dropna().to_numpy(float)
            if len(d) == 0:
                continue
            mean = float(d.mean())
            if len(d) >= 2 and d.std(ddof=1) > 0:
                half = sps.t.ppf(0.5 + LEVEL / 2, df=len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
                p = float(sps.ttest_1samp(d, 0.0).pvalue)
                lower, upper = mean - half, mean + half
            else:
                lower = upper = p = None
            rows.append({"system_a": a, "system_b": b, "conditions": int(len(d)), "difference": _round(mean), "lower": _round(lower), "upper": _round(upper), "p": _round(p, 6)})
        tested = [k for k, r in enumerate(rows) if r["p"] is not None]
        if tested:
            for k, q in zip(tested, holm([rows[k]["p"] for k in tested])):
                rows[k]["p_holm"] = _round(q, 6)
        for r in rows:
            r.setdefault("p_holm", None)
            r["sentence"] = rating_sentence(r, dim)
        out["dimensions"][dim] = {"differences": rows}
    return out


def rating_sentence(row: dict, dim: str, *, corrected: bool = True) -> str:
    p = row["p_holm"] if corrected else row["p"]
    a, b, diff, lower, upper = row["system_a"], row["system_b"], row["difference"], row["lower"], row["upper"]
    if diff is not None and diff < 0:
        a, b, diff = b, a, -diff
        lower, upper = (None if upper is None else -upper), (None if lower is None else -lower)
    interval = f" [{lower:.2f}, {upper:.2f}]" if lower is not None else ""
    return f"{a} was rated {diff:.2f} higher than {b} on {DIMENSION_WORDS.get(dim, dim)} over {row['conditions']} conditions{interval}, {_p_words(p, corrected)}."
