"""The disclosure rule of judge benchmarks: each figure, who sees it, on which part, before and after the close, and
at what resolution. Selectors take every figure a page, API answer, export or command shows through this module;
nothing else decides what a team sees.

The promise it keeps: before the close, nothing a team can read depends on the private part (its labels, or which
items are in it) except through figures of the public part. docs/benchmarks.md ("What a team sees") is TABLE in words,
and tests/benchmarks/test_non_interference.py checks the promise on every route of the URL conf: two benchmarks that
differ only in their private labels, or only in which items are private, answer a team byte for byte the same.

Whoever may read the labels of the study a benchmark was built from (the study rule: its owner, the collaborators
the owner names, admins; a benchmark with no study: its creator and admins) sees every part at full resolution; everyone else,
teams and other researchers included, sees the figures below.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from annotation.access import labels_readable_by

PUBLIC, PRIVATE, ALL = "public", "private", "all"


@dataclass(frozen=True)
class Figure:
    name: str
    before: str  # what a team sees while the benchmark is open
    after: str  # after the close
    resolution: str


TABLE = (
    Figure("accuracy, n, answered, group", "public part", "private part (leaderboard); both parts (submission page)", "unrounded in the API, 3 decimals on pages"),
    Figure("95% interval", "public part", "as accuracy", "condition-cluster bootstrap, one method for leaderboard and submission page"),
    Figure("pairwise tests (paired bootstrap, McNemar)", "public part", "private part", "p-values and discordant counts"),
    Figure("human ceiling, chance", "public part", "private part", "the part's items with a majority"),
    Figure("Brier score", "public part, when at least k items carry a probability", "as before, per part", "3 decimals"),
    Figure("reliability bins", "public part, neighbouring bins merged until each holds at least k items", "as before, per part", "mean P(A) and share of A to 2 decimals"),
    Figure("by modality, by the humans' confidence", "public part; cells under k items not shown, and more cells hidden until the hidden ones hold none or at least k", "as before, per part", "as accuracy"),
    Figure("a team's own private figures", "never (the study's owner, collaborators and admins only)", "with everyone's", "as accuracy"),
    Figure("error list (items where the judge contradicts confident humans)", "dev benchmarks only", "dev benchmarks only", "item, human label, judge label"),
    Figure("timeouts and errors of an outside judge", "the whole submission", "the whole submission", "counts (they depend on the judge's answers, not on labels)"),
    Figure("item labels", "never (a dev benchmark: in its export)", "never", "-"),
    Figure("anything on a dev benchmark", "every item, full resolution (its labels are in its export)", "the same", "full"),
    # MOS benchmarks (rated clips; never dev benchmarks: their MOS never leave the server).
    Figure("MOS: SRCC, n, answered, group", "public part; a filtered leaderboard under k clips shows no figure", "private part (leaderboard); both parts (submission page)", "unrounded in the API, 3 decimals on pages"),
    Figure("MOS: 95% interval, paired tests", "public part", "as SRCC", "clip bootstrap, one set of resamples for every submission"),
    Figure("MOS: human ceiling (split-half, Spearman-Brown)", "public part", "private part", "the part's clips with two ratings or more"),
    Figure("MOS: LCC, Kendall's tau, SRCC by modality", "public part; modality cells under k clips hidden as the accuracy cells are", "as before, per part", "3 decimals"),
    Figure("MOS values, ratings, raters", "never", "never", "-"),
)


def min_cell() -> int:
    """k: the fewest items a bin or a breakdown cell may show (BENCHMARK_MIN_CELL)."""
    return settings.BENCHMARK_MIN_CELL


def sees_everything(user, benchmark) -> bool:
    """Being a researcher is not enough: the labels behind the figures are the study's (annotation.access); a
    benchmark with no study behind it (arena battles) answers to its creator and admins."""
    if benchmark.study_id is None and benchmark.created_by_id is not None and benchmark.created_by_id == getattr(user, "pk", None):
        return True
    return labels_readable_by(study=benchmark.study, user=user)


def ranked_part(benchmark) -> str:
    """The part the leaderboard ranks on: every item of a dev benchmark; public while open, private after the close."""
    if benchmark.is_dev:
        return ALL
    return PUBLIC if benchmark.is_open else PRIVATE


def private_before_close(user, benchmark) -> bool:
    """Private-part figures of any kind reach a team only after the close; the study's readers see them at any time."""
    return sees_everything(user, benchmark)


def submission_parts(user, benchmark) -> list[str]:
    """The parts a submission's page and API answer show to this user."""
    if benchmark.is_dev:
        return [ALL]
    if not benchmark.is_open:
        return [PRIVATE, PUBLIC]
    return [PUBLIC, PRIVATE] if private_before_close(user, benchmark) else [PUBLIC]


def _round(value, digits: int):
    return None if value is None else round(float(value), digits)


def _cells(cells: dict, k: int) -> dict:
    """Breakdown cells {name: {"accuracy", "n"}}: small cells hidden, then more (smallest first) until the hidden ones
    hold no item or at least k, so a hidden cell cannot be worked out from the total and the others."""
    hidden = {name for name, cell in cells.items() if 0 < cell["n"] < k}
    held = sum(cells[name]["n"] for name in hidden)
    for name in sorted((n for n in cells if n not in hidden and cells[n]["n"] > 0), key=lambda n: (cells[n]["n"], n)):
        if held == 0 or held >= k:
            break
        hidden.add(name)
        held += cells[name]["n"]
    return {name: ({**dict.fromkeys(cell), "hidden": True} if name in hidden else dict(cell)) for name, cell in cells.items()}


def _bins(bins: list[dict], k: int) -> list[dict]:
    """Neighbouring reliability bins merged until each holds at least k items (the last short group joins the one before)."""
    groups: list[list[dict]] = []
    current: list[dict] = []
    for b in sorted(bins, key=lambda b: b["low"]):
        current.append(b)
        if sum(x["n"] for x in current) >= k:
            groups.append(current)
            current = []
    if current:
        if groups:
            groups[-1].extend(current)
        else:
            return []
    out = []
    for group in groups:
        n = sum(b["n"] for b in group)
        out.append(
            {
                "low": group[0]["low"],
                "high": group[-1]["high"],
                "n": n,
                "mean_prob": round(sum(b["mean_prob"] * b["n"] for b in group) / n, 2),
                "share_a": round(sum(b["share_a"] * b["n"] for b in group) / n, 2),
            }
        )
    return out


def _calibration(calibration: dict | None, k: int) -> dict | None:
    if calibration is None or calibration["n"] < k:
        return None
    return {"brier": _round(calibration["brier"], 3), "n": calibration["n"], "bins": _bins(calibration["bins"], k)}


def shape_figures(dims: dict, user, benchmark) -> dict:
    """One part's figures per dimension (selectors.submission_breakdown) at the resolution this user may see (a dev
    benchmark's labels are in its export: nothing to hide)."""
    if benchmark.is_dev or sees_everything(user, benchmark):
        return dims
    k = min_cell()
    out = {}
    for dim, f in dims.items():
        out[dim] = {
            **f,
            "by_modality": _cells(f["by_modality"], k),
            "by_confidence": _cells(f["by_confidence"], k),
            "calibration": _calibration(f.get("calibration"), k),
        }
    return out


def shape_mos_figures(dims: dict, user, benchmark) -> dict:
    """A MOS submission's figures per dimension (selectors.mos_submission_breakdown) at this user's resolution: small
    modality cells hidden by the accuracy cells' rule."""
    if sees_everything(user, benchmark):
        return dims
    k = min_cell()
    return {dim: {**f, "by_modality": _cells(f["by_modality"], k)} for dim, f in dims.items()}


def shape_mos_board(board: dict, user, benchmark) -> dict:
    """A MOS leaderboard at this user's resolution: a view (a modality filter) holding fewer than k clips shows no
    correlation, interval, test or ceiling, so a filter cannot pick out a few clips' order."""
    if sees_everything(user, benchmark) or board["n"] >= min_cell():
        return board
    # In submission order: the ranked order would itself tell the few clips' figures.
    rows = [{**row, "srcc": None, "ci": None, "rank": None, "hidden": True} for row in sorted(board["rows"], key=lambda r: r["submission"])]
    pairs = [{**pair, "bootstrap_p": None} for pair in board["pairs"]]
    return {**board, "rows": rows, "pairs": pairs, "ceiling": {"srcc_half": None, "srcc": None, "n": board["ceiling"]["n"], "splits": 0}, "hidden": True}
