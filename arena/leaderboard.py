"""Bradley–Terry ratings with a seeded bootstrap, from aggregated win counts.

The fit never looks at votes one by one: votes are first folded into counts per
(pair of systems, outcome), so a million votes cost the same as a few hundred
once aggregated. The bootstrap resamples those counts with one multinomial draw
per round (the same distribution as resampling votes with replacement) and all
rounds are solved together by a batched Newton method.

Scale: ratings are 400/ln(10) Elo points per natural-log unit of strength, so a
400-point gap means 10:1 odds, as on Chatbot Arena and Music Arena.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import style as sc
from .style import covariates_of

ELO_PER_NAT = 400.0 / math.log(10.0)
VOTES = ("a", "b", "tie", "both_bad")
VOTE_CODES = {vote: code for code, vote in enumerate(VOTES)}
SEEDED = "seeded"

BOARDS = ("instrumental", "vocal")


@dataclass(frozen=True)
class VoteRow:
    system_a: str
    system_b: str
    vote: str
    is_instrumental: bool = True
    # A seeded demo vote (arena/seed_votes.py): fitted like any other, counted apart so the board can say so.
    seeded: bool = False
    # Style covariates, name -> (side A's value, side B's value) (arena/style.py); None where unmeasured.
    covariates: dict = field(default=None, compare=False, hash=False)
    # What the category boards, the outlier test and the history read (arena/categories.py, arena/outliers.py).
    visitor: str = field(default="", compare=False)
    prompt: str = field(default="", compare=False)
    lyrics: str = field(default="", compare=False)
    is_prebaked: bool = field(default=False, compare=False)
    timestamp: float | None = field(default=None, compare=False)


@dataclass
class Counts:
    """Outcome counts per unordered pair (i < j): columns i wins, j wins, tie."""

    names: list[str]
    pair_i: np.ndarray
    pair_j: np.ndarray
    outcomes: np.ndarray  # (pairs, 3) int64

    @property
    def total(self) -> int:
        return int(self.outcomes.sum())


def votes_encode(rows: Iterable[VoteRow]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(sorted system names, index of system A, index of system B, vote code) per vote; codes index VOTES."""
    rows = list(rows)
    names = sorted({r.system_a for r in rows} | {r.system_b for r in rows})
    index = {name: k for k, name in enumerate(names)}
    try:
        codes = np.fromiter((VOTE_CODES[r.vote] for r in rows), dtype=np.int64, count=len(rows))
    except KeyError as exc:
        raise ValueError(f"unknown vote {exc.args[0]!r}; expected one of {', '.join(VOTES)}") from None
    a = np.fromiter((index[r.system_a] for r in rows), dtype=np.int64, count=len(rows))
    b = np.fromiter((index[r.system_b] for r in rows), dtype=np.int64, count=len(rows))
    return names, a, b, codes


def _used_only(names: list[str], a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices of the systems still in some vote, a and b renumbered over them): a system only in dropped votes is not fitted."""
    used = np.unique(np.concatenate([a, b]))
    remap = np.full(len(names), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return used, remap[a], remap[b]


def counts_from_votes(rows: Iterable[VoteRow], *, both_bad: str = "exclude") -> Counts:
    """Fold votes into per-pair outcome counts. both_bad: "exclude" (default) or "tie"."""
    return counts_from_arrays(*votes_encode(rows), both_bad=both_bad)


def counts_from_arrays(names: list[str], a: np.ndarray, b: np.ndarray, codes: np.ndarray, *, both_bad: str = "exclude") -> Counts:
    """Vectorised fold: a, b index `names` (sorted); codes index VOTES (a, b, tie, both_bad)."""
    if both_bad not in ("exclude", "tie"):
        raise ValueError(f"both_bad must be 'exclude' or 'tie', not {both_bad!r}")
    a, b, codes = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), np.asarray(codes, dtype=np.int64)
    keep = a != b
    if both_bad == "exclude":
        keep &= codes != VOTE_CODES["both_bad"]
    a, b, codes = a[keep], b[keep], np.where(codes[keep] == VOTE_CODES["both_bad"], VOTE_CODES["tie"], codes[keep])
    used, a, b = _used_only(names, a, b)
    low, high = np.minimum(a, b), np.maximum(a, b)
    a_is_low = a == low
    # Column 0: the lower-indexed system won; 1: the higher one won; 2: tie.
    column = np.where(codes == VOTE_CODES["tie"], 2, np.where((codes == VOTE_CODES["a"]) == a_is_low, 0, 1))
    n = len(used)
    pair_codes, inverse = np.unique(low * n + high, return_inverse=True)
    outcomes = np.bincount(inverse * 3 + column, minlength=3 * len(pair_codes)).reshape(-1, 3)
    return Counts(names=[names[k] for k in used], pair_i=pair_codes // n, pair_j=pair_codes % n, outcomes=outcomes.astype(np.int64))


def bt_fit(
    wins: np.ndarray, games: np.ndarray, pair_i: np.ndarray, pair_j: np.ndarray, n: int, *, ridge: float = 1e-4, tol: float = 1e-9, max_iter: int = 200
) -> np.ndarray:
    """Bradley–Terry log-strengths for a batch of count vectors.

    wins, games: (batch, pairs); wins[b, p] is how often pair_i[p] beat pair_j[p]
    (ties counted as half a win each way). Returns (batch, n) natural-log
    strengths summing to zero. The tiny ridge keeps strengths finite for a system
    that never lost (or never won) in a resample; it moves ratings by far less
    than a hundredth of a point when every system has both wins and losses.
    """
    wins = np.atleast_2d(np.asarray(wins, dtype=np.float64))
    games = np.atleast_2d(np.asarray(games, dtype=np.float64))
    batch = wins.shape[0]
    incidence = np.zeros((len(pair_i), n))
    incidence[np.arange(len(pair_i)), pair_i] = 1.0
    incidence[np.arange(len(pair_j)), pair_j] = -1.0
    theta = np.zeros((batch, n))
    eye = np.eye(n) * ridge
    for _ in range(max_iter):
        diff = theta[:, pair_i] - theta[:, pair_j]
        p = 0.5 * (1.0 + np.tanh(0.5 * diff))  # stable logistic
        grad = (wins - games * p) @ incidence - ridge * theta
        weight = games * p * (1.0 - p)
        # Negative Hessian = graph Laplacian of the pair weights + ridge (positive definite).
        lap = np.zeros((batch, n, n))
        lap[:, pair_i, pair_j] = -weight
        lap[:, pair_j, pair_i] = -weight
        idx = np.arange(n)
        lap[:, idx, idx] = -lap.sum(axis=2)
        lap += eye
        step = np.linalg.solve(lap, grad[..., None])[..., 0]
        # Damping: a near-separated resample would otherwise overshoot wildly on the first steps.
        largest = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(largest > 2.0, step * (2.0 / np.maximum(largest, 1e-300)), step)
        theta += step
        if np.abs(step).max() < tol:
            break
    return theta - theta.mean(axis=1, keepdims=True)


def to_rating(theta: np.ndarray, names: list[str], anchor: str | None, anchor_rating: float) -> np.ndarray:
    if anchor is not None:
        k = names.index(anchor)
        return ELO_PER_NAT * (theta - theta[..., k : k + 1]) + anchor_rating
    return ELO_PER_NAT * (theta - theta.mean(axis=-1, keepdims=True)) + anchor_rating


def vote_row_of(r: dict) -> VoteRow:
    """A board's vote from a battle row named as in the release (arena/release.py); the selectors build the same dict from the database."""
    return VoteRow(
        r["system_a"],
        r["system_b"],
        r["vote"],
        bool(r["is_instrumental"]),
        r.get("source") == SEEDED,
        covariates=covariates_of(r),
        visitor=r.get("user_id") or "",
        prompt=r.get("prompt") or "",
        lyrics=r.get("lyrics") or "",
        is_prebaked=bool(r.get("is_prebaked")),
        timestamp=r.get("timestamp"),
    )


def board_compute(
    counts: Counts,
    *,
    rounds: int = 1000,
    seed: int = 0,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
    ridge: float = 1e-4,
) -> dict:
    """One board: ratings, 95% percentile intervals, ranks from interval overlap, votes per system.

    Systems in `hidden` (private) and under `min_votes` are fitted (their votes
    inform everyone else's ratings) but not ranked; those under `min_votes` are
    named under "preliminary" with their vote count, so they are not silently missing.
    """
    names, n = counts.names, len(counts.names)
    meta = {"votes": counts.total, "rounds": rounds, "seed": seed, "anchor": anchor, "anchor_rating": anchor_rating, "min_votes": min_votes}
    if n < 2:
        return {**meta, "rows": [], "preliminary": []}
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor system {anchor!r} has no votes on this board")
    outcomes = counts.outcomes.astype(np.float64)
    wins = outcomes[:, 0] + 0.5 * outcomes[:, 2]
    games = outcomes.sum(axis=1)
    point = to_rating(bt_fit(wins[None], games[None], counts.pair_i, counts.pair_j, n, ridge=ridge), names, anchor, anchor_rating)[0]

    if rounds > 0:
        rng = np.random.default_rng(seed)
        flat = counts.outcomes.reshape(-1)
        sample = rng.multinomial(counts.total, flat / flat.sum(), size=rounds).reshape(rounds, -1, 3).astype(np.float64)
        boot = to_rating(
            bt_fit(sample[..., 0] + 0.5 * sample[..., 2], sample.sum(axis=2), counts.pair_i, counts.pair_j, n, ridge=ridge),
            names,
            anchor,
            anchor_rating,
        )
        lower, upper = np.percentile(boot, [2.5, 97.5], axis=0)
    else:
        lower = upper = point

    per_system = np.zeros(n, dtype=np.int64)
    np.add.at(per_system, counts.pair_i, counts.outcomes.sum(axis=1))
    np.add.at(per_system, counts.pair_j, counts.outcomes.sum(axis=1))

    return {**meta, **board_rows(names, point, lower, upper, per_system, hidden=hidden, min_votes=min_votes)}


def board_rows(names, point, lower, upper, per_system, *, hidden: Iterable[str], min_votes: int) -> dict:
    """The listed rows (rank by interval overlap) and the preliminary ones, from fitted ratings and intervals."""
    hidden = set(hidden)
    shown = [k for k in range(len(names)) if names[k] not in hidden and per_system[k] >= min_votes]
    rows = []
    for k in shown:
        rank = 1 + sum(1 for m in shown if m != k and lower[m] > upper[k])
        rows.append(
            {
                "system": names[k],
                "rating": round(float(point[k]), 2),
                "lower": round(float(lower[k]), 2),
                "upper": round(float(upper[k]), 2),
                "rank": rank,
                "votes": int(per_system[k]),
            }
        )
    rows.sort(key=lambda r: (r["rank"], -r["rating"], r["system"]))
    return {"rows": rows, "preliminary": _preliminary(names, per_system, hidden, min_votes)}


def _preliminary(names, per_system, hidden: set, min_votes: int) -> list[dict]:
    """Public systems with votes but fewer than the listing threshold, most votes first."""
    under = [k for k in range(len(names)) if names[k] not in hidden and 0 < per_system[k] < min_votes]
    return [{"system": names[k], "votes": int(per_system[k])} for k in sorted(under, key=lambda k: (-per_system[k], names[k]))]


def boards_compute(
    rows: Iterable[VoteRow],
    *,
    rounds: int = 1000,
    seed: int = 0,
    both_bad: str = "exclude",
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
    style: Iterable[str] | None = None,
) -> dict:
    """The instrumental and vocal boards, split on each battle's routed flag.

    style: covariate names (arena/style.py) to add each board's style-controlled fit as `style`; None: none.
    """
    rows = list(rows)
    hidden = set(hidden)
    result = {"both_bad": both_bad, "boards": {}}
    for board in BOARDS:
        want_instrumental = board == "instrumental"
        on_board = [r for r in rows if r.is_instrumental == want_instrumental]
        result["boards"][board] = board_with_style(
            on_board, rounds=rounds, seed=seed, both_bad=both_bad, anchor=anchor, anchor_rating=anchor_rating, min_votes=min_votes, hidden=hidden, style=style
        )
    return result


def board_with_style(
    rows: list[VoteRow],
    *,
    rounds: int = 1000,
    seed: int = 0,
    both_bad: str = "exclude",
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
    style: Iterable[str] | None = None,
) -> dict:
    """One plain board of these votes, and beside it, when covariates are named, its style-controlled fit."""
    counts = counts_from_votes(rows, both_bad=both_bad)
    board_anchor = anchor if anchor in counts.names else None
    result = board_compute(counts, rounds=rounds, seed=seed, anchor=board_anchor, anchor_rating=anchor_rating, min_votes=min_votes, hidden=hidden)
    if style is not None:
        result["style"] = style_board_compute(
            rows, covariates=tuple(style), plain_rows=result["rows"], both_bad=both_bad, rounds=rounds, seed=seed,
            anchor=board_anchor, anchor_rating=anchor_rating, min_votes=min_votes, hidden=hidden,
        )
    return result


# --- Style control (the model and its fit: arena/style.py) -----------------------------------

def style_board_compute(
    rows: Sequence,
    *,
    covariates: Sequence[str] = sc.DEFAULT_COVARIATES,
    plain_rows: Sequence[dict] = (),
    both_bad: str = "exclude",
    rounds: int = 1000,
    seed: int = 0,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
    ridge: float = sc.RIDGE,
    ridge_coef: float = sc.RIDGE_COEF,
) -> dict:
    """One board's style-controlled ratings and covariate coefficients (the model: arena/style.py).

    plain_rows: the plain board's rows of the same battles, for each system's plain rank and the change.
    """
    covariates = sc.covariates_check(covariates)
    names, a, b, raw, score, counts, left_out = sc.style_cells(rows, covariates, both_bad=both_bad)
    total, n = int(counts.sum()), len(names)
    meta = {
        "votes": total, "left_out": left_out, "rounds": rounds, "seed": seed, "covariates": {}, "constant": [], "rows": [],
        "own_variation_low": sc.OWN_VARIATION_LOW,
    }
    if n < 2 or total == 0:
        meta["constant"] = list(covariates)
        return meta
    scale = np.sqrt((counts[:, None] * raw**2).sum(axis=0) / total) if raw.size else np.zeros(0)
    active = [j for j, name in enumerate(covariates) if scale[j] > 0]
    meta["constant"] = [name for j, name in enumerate(covariates) if scale[j] <= 0]
    z = raw[:, active] / scale[active] if active else np.zeros((len(a), 0))
    fit = dict(ridge=ridge, ridge_coef=ridge_coef)
    theta, beta = sc.contextual_bt_fit(a, b, z, score, counts[None], n, **fit)
    if anchor is not None and anchor not in names:
        anchor = None
    point = to_rating(theta, names, anchor, anchor_rating)[0]
    if rounds > 0:
        rng = np.random.default_rng(seed)
        chunk = max(1, sc.ROUND_CHUNK_CELLS // max(1, len(a)))
        boot_r, boot_b = [], []
        for start in range(0, rounds, chunk):
            draws = rng.multinomial(total, counts / total, size=min(chunk, rounds - start)).astype(np.float64)
            t, bb = sc.contextual_bt_fit(a, b, z, score, draws, n, **fit)
            boot_r.append(to_rating(t, names, anchor, anchor_rating))
            boot_b.append(bb)
        lower, upper = np.percentile(np.concatenate(boot_r), [2.5, 97.5], axis=0)
        coef_lower, coef_upper = np.percentile(np.concatenate(boot_b), [2.5, 97.5], axis=0) if active else (np.zeros(0), np.zeros(0))
    else:
        lower = upper = point
        coef_lower = coef_upper = beta[0]
    for position, j in enumerate(active):
        unit, meaning = sc.COVARIATES[covariates[j]]
        meta["covariates"][covariates[j]] = {
            "coefficient": round(float(beta[0, position]), 4),
            "interval": [round(float(coef_lower[position]), 4), round(float(coef_upper[position]), 4)],
            "elo": round(float(ELO_PER_NAT * beta[0, position]), 2),
            "scale": round(float(scale[j]), 4),
            "unit": unit,
            "meaning": meaning,
        }
    own = sc.own_variation(a, b, z, counts, n)
    for position, j in enumerate(active):
        meta["covariates"][covariates[j]]["own_variation"] = round(float(own[position]), 4)
    per_system = np.zeros(n, dtype=np.int64)
    np.add.at(per_system, a, counts.astype(np.int64))
    np.add.at(per_system, b, counts.astype(np.int64))
    plain_rank = {r["system"]: r["rank"] for r in plain_rows}
    hidden = set(hidden)
    shown = [k for k in range(n) if names[k] not in hidden and per_system[k] >= min_votes]
    out = []
    for k in shown:
        rank = 1 + sum(1 for m in shown if m != k and lower[m] > upper[k])
        before = plain_rank.get(names[k])
        out.append(
            {
                "system": names[k],
                "rating": round(float(point[k]), 2),
                "interval": [round(float(lower[k]), 2), round(float(upper[k]), 2)],
                "rank": rank,
                "plain_rank": before,
                # Positive: the system ranks better once style is accounted for.
                "rank_change": None if before is None else before - rank,
                "votes": int(per_system[k]),
            }
        )
    out.sort(key=lambda r: (r["rank"], -r["rating"], r["system"]))
    meta["rows"] = out
    return meta


# --- Music Arena's method ---------------------------------------------------------------------
#
# Reproduces the board gclef-cmu/music-arena publishes (components/leaderboard/ma_leaderboard,
# read at 799dcd7, March 2026), so a lab can put its board next to theirs:
# - both_bad votes are dropped; a tie is half a win each way;
# - ratings are an L2-penalised logistic regression without intercept, penalty C = 1 on the
#   summed per-vote log-loss (scikit-learn's objective 0.5·|w|² + C·Σ loss), mean-centred at 1000
#   on the 400/ln 10 scale; when every vote has the same side-label (all A, or all B, no tie)
#   every system is at 1000, as their code returns;
# - the interval is the point rating ± 1.96 standard deviations of the bootstrap ratings
#   (battles resampled with replacement; a system absent from a resample keeps its point rating);
# - the rank is the position by rating among the listed systems;
# - boards split by battle flag and by system capability: a battle between two vocal-capable
#   systems is never on the instrumental board, and only such battles are on the vocal one;
# - a board with fewer than 30 battles is empty; systems under 30 votes are not listed.

AUDITORIUM, MUSIC_ARENA = "auditorium", "music-arena"
METHODS = (AUDITORIUM, MUSIC_ARENA)
MA_PENALTY_C = 1.0
MA_MIN_VOTES = 30
MA_MIN_BATTLES = 30
MA_Z = 1.96


def ma_board_rows(rows: Iterable[VoteRow], board: str, vocal: Iterable[str]) -> list[VoteRow]:
    """The battles on one of Music Arena's boards (both_bad still in; the fit drops it)."""
    vocal = set(vocal)
    want_instrumental = board == "instrumental"
    out = []
    for r in rows:
        both_vocal = r.system_a in vocal and r.system_b in vocal
        if r.is_instrumental == want_instrumental and both_vocal != want_instrumental:
            out.append(r)
    return out


def _ma_cells(rows: list[VoteRow]):
    """Votes folded into ordered cells (system shown as A, system shown as B, a / b / tie) with counts."""
    names, a, b, codes = votes_encode(rows)
    keep = (codes != VOTE_CODES["both_bad"]) & (a != b)
    a, b, codes = a[keep], b[keep], codes[keep]
    used, a, b = _used_only(names, a, b)
    n = len(used)
    cell_codes, counts = np.unique((a * n + b) * 3 + codes, return_counts=True)
    return [names[k] for k in used], cell_codes // 3 // n, cell_codes // 3 % n, cell_codes % 3, counts.astype(np.float64)


def _ma_ratings(counts: np.ndarray, cell_a, cell_b, outcome, n: int, rating0: float) -> np.ndarray:
    """Ratings for a batch of cell-count vectors (batch, cells); NaN for a system absent from a vector."""
    counts = np.atleast_2d(counts)
    low, high = np.minimum(cell_a, cell_b), np.maximum(cell_a, cell_b)
    pair_codes, pair_of_cell = np.unique(low * n + high, return_inverse=True)
    # Share of each cell's vote that is a win for the pair's lower-indexed system.
    low_wins = np.where(outcome == VOTE_CODES["tie"], 0.5, ((outcome == VOTE_CODES["a"]) == (cell_a == low)).astype(np.float64))
    to_pair = np.zeros((len(outcome), len(pair_codes)))
    to_pair[np.arange(len(outcome)), pair_of_cell] = 1.0
    wins, games = (counts * low_wins) @ to_pair, counts @ to_pair
    theta = bt_fit(wins, games, pair_codes // n, pair_codes % n, n, ridge=1.0 / MA_PENALTY_C)
    played = np.zeros((counts.shape[0], n))
    np.add.at(played.T, cell_a, counts.T)
    np.add.at(played.T, cell_b, counts.T)
    present = played > 0
    # The penalised optimum already sums to zero over the systems present, so centring over
    # them (as their code does) changes nothing; absent systems sit at zero.
    ratings = rating0 + ELO_PER_NAT * theta
    # Their regression sees two classes only if some vote is a tie or both sides won somewhere.
    a_side = counts[:, outcome != VOTE_CODES["b"]].sum(axis=1)
    b_side = counts[:, outcome != VOTE_CODES["a"]].sum(axis=1)
    one_class = (a_side == 0) | (b_side == 0)
    ratings[one_class] = rating0
    return np.where(present, ratings, np.nan)


def ma_board_compute(rows: list[VoteRow], *, rounds: int = 1000, seed: int = 0, min_votes: int = MA_MIN_VOTES, hidden: Iterable[str] = ()) -> dict:
    """One board by Music Arena's rules (see the comment above); rows are that board's battles."""
    names, cell_a, cell_b, outcome, counts = _ma_cells(rows)
    total, n = int(counts.sum()), len(names)
    meta = {"votes": total, "rounds": rounds, "seed": seed, "min_votes": min_votes, "penalty_c": MA_PENALTY_C, "interval": "rating ± 1.96 sd of bootstrap"}
    if total < MA_MIN_BATTLES or n < 2:
        return {**meta, "rows": [], "preliminary": []}
    point = _ma_ratings(counts[None], cell_a, cell_b, outcome, n, 1000.0)[0]
    if rounds > 0:
        rng = np.random.default_rng(seed)
        boot = _ma_ratings(rng.multinomial(total, counts / total, size=rounds).astype(np.float64), cell_a, cell_b, outcome, n, 1000.0)
        boot = np.where(np.isnan(boot), point, boot)
        margin = MA_Z * boot.std(axis=0)
    else:
        margin = np.zeros(n)
    per_system = np.zeros(n, dtype=np.int64)
    np.add.at(per_system, cell_a, counts.astype(np.int64))
    np.add.at(per_system, cell_b, counts.astype(np.int64))
    hidden = set(hidden)
    shown = sorted((k for k in range(n) if names[k] not in hidden and per_system[k] >= min_votes), key=lambda k: (-point[k], names[k]))
    out = [
        {
            "system": names[k],
            "rating": round(float(point[k]), 2),
            "lower": round(float(point[k] - margin[k]), 2),
            "upper": round(float(point[k] + margin[k]), 2),
            "rank": position,
            "votes": int(per_system[k]),
        }
        for position, k in enumerate(shown, start=1)
    ]
    return {**meta, "rows": out, "preliminary": _preliminary(names, per_system, hidden, min_votes)}


def ma_boards_compute(rows: Iterable[VoteRow], *, vocal: Iterable[str], rounds: int = 1000, seed: int = 0, min_votes: int = MA_MIN_VOTES, hidden: Iterable[str] = ()) -> dict:
    """Music Arena's instrumental and vocal boards; `vocal` names the vocal-capable systems."""
    rows, vocal, hidden = list(rows), set(vocal), set(hidden)
    return {
        "method": MUSIC_ARENA,
        "both_bad": "exclude",
        "boards": {board: ma_board_compute(ma_board_rows(rows, board, vocal), rounds=rounds, seed=seed, min_votes=min_votes, hidden=hidden) for board in BOARDS},
    }


def seeded_on_boards(rows: Iterable[VoteRow], *, method: str = AUDITORIUM, vocal: Iterable[str] = (), both_bad: str = "exclude") -> dict[str, int]:
    """How many of each board's fitted votes are seeded demo votes, by the same board split and both_bad rule as the fit."""
    rows = [r for r in rows if r.seeded]
    out = {}
    for board in BOARDS:
        if method == MUSIC_ARENA:
            on_board = [r for r in ma_board_rows(rows, board, vocal) if r.vote != "both_bad"]
        else:
            on_board = [r for r in rows if r.is_instrumental == (board == "instrumental") and (both_bad == "tie" or r.vote != "both_bad")]
        out[board] = sum(1 for r in on_board if r.system_a != r.system_b)
    return out


def boards_for_method(rows: Iterable[VoteRow], *, method: str = AUDITORIUM, vocal: Iterable[str] = (), **options) -> dict:
    """Both boards by the named method; options are that method's (see boards_compute, ma_boards_compute).

    Each board also says how many of its votes are seeded demo votes (`seeded_votes`).
    """
    rows, vocal = list(rows), set(vocal)
    if method == MUSIC_ARENA:
        if options.pop("style", None) is not None:
            raise ValueError("style control is a fit of our method; Music Arena's method has none (leave out --style-control or use --method auditorium)")
        result = ma_boards_compute(rows, vocal=vocal, **options)
    elif method == AUDITORIUM:
        result = {"method": AUDITORIUM, **boards_compute(rows, **options)}
        if options.get("style") is not None:
            result["style_covariates"] = list(options["style"])
    else:
        raise ValueError(f"unknown leaderboard method {method!r}; use one of {', '.join(METHODS)}")
    for board, count in seeded_on_boards(rows, method=method, vocal=vocal, both_bad=options.get("both_bad", "exclude")).items():
        result["boards"][board]["seeded_votes"] = count
    return result


# --- The noisy board ------------------------------------------------------------------------

# A Bradley–Terry board that models each voter's reliability (crowd-kit's noisy Bradley–Terry), beside the plain one.
#
# Each voter either follows the systems' strengths (with probability `skill`) or answers by a
# personal side preference; a cohort of careless or automated voters then shows as low skills,
# and their votes pull the ratings less. Ties and "both bad" votes name no winner and are left
# out. Ratings are put on the plain board's Elo scale (mean 1000) for comparison; there is no
# interval (the fit has no bootstrap here).

NOISY_LOW_SKILL = 0.5
NOISY_MIN_VOTES = 10


def noisy_board(rows, *, seed: int = 0, hidden=()) -> dict:
    """One board from (voter, a, b, vote) rows: ratings, and the voters' skill distribution."""
    decided = [(voter, a, b, a if vote == "a" else b) for voter, a, b, vote in rows if vote in ("a", "b") and a != b]
    if len(decided) < NOISY_MIN_VOTES:
        return {"rows": [], "votes": len(decided), "voters": 0, "low_skill_voters": 0, "low_skill_votes": 0}
    import pandas as pd
    from crowdkit.aggregation import NoisyBradleyTerry

    frame = pd.DataFrame(decided, columns=["worker", "left", "right", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NoisyBradleyTerry(n_iter=200, random_state=seed).fit(frame)
    scores = model.scores_.clip(1e-9, 1 - 1e-9)
    strength = np.log(scores / (1 - scores))
    ratings = ELO_PER_NAT * (strength - strength.mean()) + 1000.0
    votes = pd.concat([frame["left"], frame["right"]]).value_counts()
    skills = model.skills_
    low = skills[skills < NOISY_LOW_SKILL].index
    table = [
        {"system": name, "rating": round(float(ratings[name]), 1), "votes": int(votes.get(name, 0))}
        for name in ratings.sort_values(ascending=False).index
        if name not in hidden
    ]
    return {
        "rows": table,
        "votes": len(decided),
        "voters": int(len(skills)),
        "low_skill_voters": int(len(low)),
        "low_skill_votes": int(frame["worker"].isin(low).sum()),
        "skill_quartiles": [round(float(q), 3) for q in np.quantile(skills.to_numpy(), [0.25, 0.5, 0.75])],
        "skills": {str(voter): round(float(value), 4) for voter, value in skills.items()},
    }


def noisy_boards(rows, *, seed: int = 0, hidden=()) -> dict:
    """Both boards (instrumental, vocal) from selectors.voter_vote_rows()."""
    return {
        board: noisy_board([(v, a, b, vote) for v, a, b, vote, instrumental in rows if instrumental == (board == "instrumental")], seed=seed, hidden=hidden)
        for board in BOARDS
    }
