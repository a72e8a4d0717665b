"""Style control: a Bradley–Terry board with per-battle style covariates, beside the plain one.

Music has strong style effects: louder, longer and sung clips tend to win whatever the system.
The contextual model (as Chatbot Arena's style control) gives the chance that A beats B as

    logistic(theta_A - theta_B + sum_k beta_k * z_k)

where z_k is the battle's difference A minus B in covariate k, divided by that difference's root
mean square over the board's battles (its standard deviation about zero: sides are drawn at random,
so no difference means no style effect and there is no intercept). theta is the style-controlled
strength; beta_k is how much one such unit of difference moves the odds, whoever made the clip.

Covariates (ARENA_STYLE_COVARIATES picks them), per side of a battle:
- duration: the stored clip's length in seconds;
- loudness: BS.1770 integrated loudness of the clip as generated, before the arena levelled it (LUFS);
- true_peak: its true peak as generated (dBTP);
- vocals: 1 when the clip has vocals, else 0;
- generation_seconds: seconds the arena waited for the clip.

A battle missing any chosen covariate (a clip measured before they were stored, a silent clip) is left
out of the style fit and counted; a covariate with no variation on a board (vocals on the vocal board,
where every clip sings) cannot be estimated there and is named in `constant`.

The fit is Newton's method on cells of identical battles (same pair, outcome and covariates, counted),
so its result does not depend on the order of the votes; the bootstrap resamples battles with one
multinomial draw over those cells per round, all rounds solved together, like the plain board.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


# name -> (unit of the raw difference, what it is)
COVARIATES = {
    "duration": ("s", "Clip length"),
    "loudness": ("LU", "Integrated loudness as generated (BS.1770-4), before the arena's levelling"),
    "true_peak": ("dB", "True peak as generated (4x oversampled), before the arena's levelling"),
    "vocals": ("", "Vocals present (1) or not (0)"),
    "generation_seconds": ("s", "Seconds the arena waited for the clip"),
}
DEFAULT_COVARIATES = tuple(COVARIATES)
# Each covariate's release column, written once per side as <column>_a and <column>_b.
COLUMNS = {"duration": "duration", "loudness": "loudness_lufs", "true_peak": "true_peak", "vocals": "vocals", "generation_seconds": "generation_seconds"}
# The same tiny ridge as the plain board on the strengths. The coefficients get a unit one (a standard
# normal prior on the effect of one rms of difference): where a covariate is nearly a function of which
# systems met (each system always about as loud), the likelihood cannot tell the system from its
# style, and this puts what cannot be told apart on the system, as the plain board does, instead of
# letting ratings run off by thousands of points. With a few hundred battles it moves an identified
# coefficient by well under 1 %.
RIDGE = 1e-4
RIDGE_COEF = 1.0
ROUND_CHUNK_CELLS = 4_000_000
# A's share of the win: a tie (and both_bad counted as one) is half a win each way.
SCORES = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}


def covariates_check(names: Iterable[str]) -> tuple[str, ...]:
    """The covariate names, in a fixed order, or ValueError naming an unknown one and the known ones."""
    names = tuple(dict.fromkeys(n.strip() for n in names if n and n.strip()))
    unknown = [n for n in names if n not in COVARIATES]
    if unknown:
        raise ValueError(f"unknown style covariate {', '.join(map(repr, unknown))}; use some of {', '.join(COVARIATES)}")
    return tuple(n for n in COVARIATES if n in names)


def covariates_of(row) -> dict:
    """name -> (A's value, B's value) from a battle row named as in the release (None where unmeasured)."""

    def value(key):
        v = row.get(key)
        return None if v is None else float(v)

    return {name: (value(f"{column}_a"), value(f"{column}_b")) for name, column in COLUMNS.items()}


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def contextual_bt_fit(
    a: np.ndarray,
    b: np.ndarray,
    z: np.ndarray,
    score: np.ndarray,
    weights: np.ndarray,
    n: int,
    *,
    ridge: float = RIDGE,
    ridge_coef: float = RIDGE_COEF,
    tol: float = 1e-9,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Strengths (batch, n) and coefficients (batch, k) maximising the penalised likelihood.

    a, b index the systems of each cell; z (cells, k) its scaled covariate differences; score the
    share of the cell's votes won by A (1, 0.5 for a tie, 0); weights (batch, cells) how often each
    cell counts in each fit. The objective is sum(weights * log-likelihood) - ridge/2 |theta|^2 -
    ridge_coef/2 |beta|^2; strengths are returned centred (the likelihood ignores their mean).
    """
    from scipy import sparse

    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    z = np.asarray(z, dtype=np.float64).reshape(len(a), -1)
    batch, cells, k = weights.shape[0], len(a), z.shape[1]
    rows = np.arange(cells)
    incidence = sparse.csr_matrix((np.r_[np.ones(cells), -np.ones(cells)], (np.r_[rows, rows], np.r_[a, b])), shape=(cells, n))
    low, high = np.minimum(a, b), np.maximum(a, b)
    pair_codes, pair_of_cell = np.unique(low * n + high, return_inverse=True)
    to_pair = sparse.csr_matrix((np.ones(cells), (rows, pair_of_cell)), shape=(cells, len(pair_codes)))
    pair_i, pair_j = pair_codes // n, pair_codes % n
    zz = (z[:, :, None] * z[:, None, :]).reshape(cells, k * k)
    theta, beta = np.zeros((batch, n)), np.zeros((batch, k))
    ridges = np.r_[np.full(n, ridge), np.full(k, ridge_coef)]
    idx = np.arange(n)
    for _ in range(max_iter):
        p = _expit(theta[:, a] - theta[:, b] + beta @ z.T)
        resid, curv = weights * (score - p), weights * p * (1.0 - p)
        grad = np.concatenate([(incidence.T @ resid.T).T - ridge * theta, resid @ z - ridge_coef * beta], axis=1)
        hess = np.zeros((batch, n + k, n + k))
        pair_w = (to_pair.T @ curv.T).T
        hess[:, pair_i, pair_j] = -pair_w
        hess[:, pair_j, pair_i] = -pair_w
        hess[:, idx, idx] = -hess[:, :n, :n].sum(axis=2)
        for j in range(k):
            cross = (incidence.T @ (curv * z[:, j]).T).T
            hess[:, :n, n + j] = cross
            hess[:, n + j, :n] = cross
        hess[:, n:, n:] = (curv @ zz).reshape(batch, k, k)
        hess[:, np.arange(n + k), np.arange(n + k)] += ridges
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        # Damping, as the plain fit: a near-separated resample would otherwise overshoot on the first steps.
        largest = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(largest > 2.0, step * (2.0 / np.maximum(largest, 1e-300)), step)
        theta += step[:, :n]
        beta += step[:, n:]
        if np.abs(step).max() < tol:
            break
    return theta - theta.mean(axis=1, keepdims=True), beta


def style_cells(rows: Sequence, covariates: Sequence[str], *, both_bad: str = "exclude"):
    """The board's battles as counted cells for the fit.

    Returns (names, a, b, raw differences (cells, k), score, counts, left_out), where left_out counts
    battles without every chosen covariate. Ties score 0.5; both_bad is left out or a tie.
    """
    keyed = []
    left_out = 0
    for r in rows:
        if r.system_a == r.system_b or (r.vote == "both_bad" and both_bad == "exclude"):
            continue
        values = []
        for name in covariates:
            pair = (r.covariates or {}).get(name)
            if pair is None or pair[0] is None or pair[1] is None:
                break
            values.append(float(pair[0]) - float(pair[1]))
        else:
            if r.vote not in SCORES:
                raise ValueError(f"unknown vote {r.vote!r}; expected one of {', '.join(SCORES)}")
            score = SCORES[r.vote]
            keyed.append((r.system_a, r.system_b, score, *values))
            continue
        left_out += 1
    names = sorted({k[0] for k in keyed} | {k[1] for k in keyed})
    if not keyed:
        return names, *(np.zeros(0, dtype=np.int64),) * 2, np.zeros((0, len(covariates))), np.zeros(0), np.zeros(0), left_out
    index = {name: i for i, name in enumerate(names)}
    table = np.array([(index[k[0]], index[k[1]], k[2], *k[3:]) for k in keyed], dtype=np.float64)
    # Identical battles become one counted cell; np.unique sorts, so the order of the votes never matters.
    cells, counts = np.unique(table, axis=0, return_counts=True)
    return names, cells[:, 0].astype(np.int64), cells[:, 1].astype(np.int64), cells[:, 3:], cells[:, 2], counts.astype(np.float64), left_out


# Below this share of its variation left once the systems are known, a covariate is reported as
# mostly fixed by which systems met (each system about as loud in every clip, say).
OWN_VARIATION_LOW = 0.2


def own_variation(a, b, z, counts, n) -> np.ndarray:
    """Per covariate: the share of its (count-weighted) sum of squares that the systems' identities do not explain.

    Near 0, the difference is almost a function of which two systems met; the fit then cannot tell a
    system's quality from its style, and the coefficient's interval is wide.
    """
    if z.shape[1] == 0:
        return np.zeros(0)
    design = np.zeros((len(a), n))
    design[np.arange(len(a)), a] = 1.0
    design[np.arange(len(a)), b] = -1.0
    root = np.sqrt(counts)[:, None]
    fitted, *_ = np.linalg.lstsq(design * root, z * root, rcond=None)
    residual = ((z - design @ fitted) ** 2 * counts[:, None]).sum(axis=0)
    total = (z**2 * counts[:, None]).sum(axis=0)
    return np.where(total > 0, residual / np.maximum(total, 1e-300), 0.0)
