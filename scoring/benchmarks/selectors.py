"""Reads for judge benchmarks: who may see what, and the scores (through scoring.evaluation).

What each figure shows, to whom, on which part and when is decided in one place, disclosure.py
(docs/benchmarks.md, "What a team sees"); the functions here ask it and never decide on their own.
The leaderboard is shown to researchers, to members of any team, and to everyone when
BENCHMARK_LEADERBOARD_PUBLIC is on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q

from common.errors import ServiceError
from common.roles import is_admin, is_researcher
from scoring.evaluation import (
    ALIGNMENT,
    DIMENSIONS,
    MODALITIES,
    MUSICALITY,
    NO_LABEL,
    breakdown,
    calibration,
    compare_submissions,
    human_ceiling,
    item_scores,
)

from scoring import ratings

from . import disclosure
from .disclosure import ALL, PRIVATE, PUBLIC
from .models import Benchmark, BenchmarkItem, Prediction, Submission, Team
PARTS = (PUBLIC, PRIVATE, ALL)


# --- Who may see what -----------------------------------------------------------------------------------


def user_teams(user) -> list[Team]:
    if not getattr(user, "is_authenticated", False):
        return []
    return list(Team.objects.filter(members=user))


def can_view_leaderboard(user) -> bool:
    if settings.BENCHMARK_LEADERBOARD_PUBLIC or is_researcher(user):
        return True
    return bool(user_teams(user))


def shown_part(benchmark: Benchmark) -> str:
    """The part the leaderboard ranks on (disclosure.ranked_part)."""
    return disclosure.ranked_part(benchmark)


def can_view_submission(user, submission: Submission) -> bool:
    if is_researcher(user):
        return True
    if submission.team.members.filter(pk=getattr(user, "pk", None)).exists():
        return True
    return can_view_leaderboard(user)


def entered_teams(user, benchmark: Benchmark) -> list[Team]:
    """The user's teams that submit to this benchmark: made for it, or made for any (by the command)."""
    return [t for t in user_teams(user) if t.benchmark_id in (None, benchmark.pk)]


def submitting_team(user, name: str) -> Team:
    """The team a submission is made for, by name: one of the user's teams (researchers act for any team). Whether
    that team may submit to a given benchmark is services._check_can_submit's to say."""
    teams = Team.objects.all() if is_researcher(user) else Team.objects.filter(members=getattr(user, "pk", None))
    found = teams.filter(name=name or "").first() if getattr(user, "is_authenticated", False) else None
    if found is None:
        raise ServiceError("Give `team`: the name of one of your teams.", code="no_team")
    return found


def can_download_export(user, benchmark: Benchmark) -> bool:
    """Whoever may read the study's labels (disclosure.sees_everything), and members of a team entered in this
    benchmark: a dev export carries labels, every export the study's clips, and no team needs another benchmark's items."""
    return disclosure.sees_everything(user, benchmark) or bool(entered_teams(user, benchmark))


def can_listen_disagreements(user, benchmark: Benchmark) -> bool:
    """Only on dev benchmarks (their labels are public to their teams anyway), and only for researchers and their teams."""
    return benchmark.is_dev and can_download_export(user, benchmark)


def can_close(user, benchmark: Benchmark) -> bool:
    """Its creator and admins (services.benchmark_close refuses everyone else)."""
    return is_admin(user) or (benchmark.created_by_id is not None and benchmark.created_by_id == getattr(user, "pk", None))


def run_progress(submission: Submission) -> dict | None:
    """While a judge runs: items answered so far (stored a chunk at a time) of the benchmark's items."""
    if submission.state not in (Submission.State.PENDING, Submission.State.RUNNING):
        return None
    return {"stored": Prediction.objects.filter(submission=submission).count(), "items": submission.benchmark.n_items}


def benchmarks_visible(user):
    return Benchmark.objects.all() if can_view_leaderboard(user) else Benchmark.objects.none()


# --- Scores -------------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """A benchmark's items and its scored submissions as arrays (items in position order)."""

    item_pks: np.ndarray
    item_ids: list
    private: np.ndarray
    clusters: np.ndarray
    modality: np.ndarray
    truth: dict  # dim -> codes (N)
    confidence: dict  # dim -> floats (N, NaN for none)
    votes: dict  # dim -> (item index per vote, code per vote)
    submissions: list
    pred: dict  # dim -> S x N codes
    prob: dict  # dim -> S x N floats (NaN for none)
    errors: np.ndarray  # S x N bools: an outside judge gave no answer


def load_frame(benchmark: Benchmark) -> Frame:
    items = list(BenchmarkItem.objects.filter(benchmark=benchmark).order_by("position").values_list("id", "item_id", "is_private", "cluster", "modality", "labels"))
    pks = np.array([i[0] for i in items], dtype=np.int64)
    index = {pk: n for n, pk in enumerate(pks)}
    truth, confidence, votes = {}, {}, {}
    for dim in DIMENSIONS:
        blocks = [(i[5] or {}).get(dim) or {} for i in items]
        truth[dim] = np.array([b.get("truth", NO_LABEL) for b in blocks], dtype=int)
        confidence[dim] = np.array([np.nan if b.get("confidence") is None else b["confidence"] for b in blocks], dtype=float)
        owner = [n for n, b in enumerate(blocks) for _ in b.get("votes", [])]
        codes = [c for b in blocks for c in b.get("votes", [])]
        votes[dim] = (np.array(owner, dtype=int), np.array(codes, dtype=int))
    submissions = list(Submission.objects.filter(benchmark=benchmark, state=Submission.State.DONE).select_related("team").order_by("id"))
    row_of = {s.pk: n for n, s in enumerate(submissions)}
    shape = (len(submissions), len(items))
    pred = {dim: np.full(shape, NO_LABEL, dtype=int) for dim in DIMENSIONS}
    prob = {dim: np.full(shape, np.nan) for dim in DIMENSIONS}
    errors = np.zeros(shape, dtype=bool)
    rows = Prediction.objects.filter(submission__in=submissions).values_list("submission_id", "item_id", "alignment", "musicality", "prob_alignment", "prob_musicality", "error")
    for sub_id, item_pk, align, music, p_align, p_music, error in rows.iterator(chunk_size=5000):
        s, n = row_of[sub_id], index[item_pk]
        pred[ALIGNMENT][s, n], pred[MUSICALITY][s, n] = align, music
        if p_align is not None:
            prob[ALIGNMENT][s, n] = p_align
        if p_music is not None:
            prob[MUSICALITY][s, n] = p_music
        errors[s, n] = bool(error)
    return Frame(
        item_pks=pks,
        item_ids=[i[1] for i in items],
        private=np.array([i[2] for i in items], dtype=bool),
        clusters=np.array([i[3] for i in items]),
        modality=np.array([i[4] for i in items]),
        truth=truth,
        confidence=confidence,
        votes=votes,
        submissions=submissions,
        pred=pred,
        prob=prob,
        errors=errors,
    )


def _part_mask(frame: Frame, part: str) -> np.ndarray:
    if part == PUBLIC:
        return ~frame.private
    if part == PRIVATE:
        return frame.private.copy()
    return np.ones(len(frame.private), dtype=bool)


def _scores_key(kind: str, benchmark: Benchmark, *, part: str, dim: str, modality: str | None) -> str:
    """The cache key of one leaderboard cell (pair or MOS); an unknown part, dimension or modality is a caller's error."""
    if part not in PARTS or dim not in DIMENSIONS or (modality and modality not in MODALITIES):
        raise ValueError("unknown part, dimension or modality")
    return f"{kind}:{_stamp(benchmark)}:{part}:{dim}:{modality or ''}"


def _cached_cell(kind: str, benchmark: Benchmark, *, part: str, dim: str, modality: str | None, compute: Callable[[], dict]) -> dict:
    """One leaderboard cell (pair or MOS), computed once until a submission is added or finishes."""
    key = _scores_key(kind, benchmark, part=part, dim=dim, modality=modality)
    cached = cache.get(key)
    if cached is not None:
        return cached
    out = compute()
    cache.set(key, out, 3600)
    return out


def _cell_mask(frame: Frame | MosFrame, part: str, labelled: np.ndarray, modality: str | None) -> np.ndarray:
    """The items one cell scores: those of the part with a reference answer, of the modality when one is named."""
    mask = _part_mask(frame, part) & labelled
    if modality:
        mask &= frame.modality == modality
    return mask


def _votes_in(mask: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Which human answers (each naming its item by row) fall on the cell's items."""
    return mask[owner] if owner.size else np.zeros(0, dtype=bool)


def _stamp(benchmark: Benchmark) -> str:
    # Changes whenever a submission is added, finishes or is scored again (Max ignores NULLs on every database).
    agg = Submission.objects.filter(benchmark=benchmark).aggregate(last=Max("id"), done=Count("id", filter=Q(state=Submission.State.DONE)), changed=Max("finished_at"))
    return hashlib.sha256(f"{benchmark.pk}:{agg['last']}:{agg['done']}:{agg['changed']}".encode()).hexdigest()[:32]


def scores(benchmark: Benchmark, *, part: str, dim: str, modality: str | None = None, frame: Frame | None = None) -> dict:
    """Every scored submission of the benchmark on one part and dimension (optionally one modality).

    Returns {"n", "chance", "ceiling", "rows": [per submission, in submission order: "submission",
    "accuracy", "ci", "n", "answered", "rank", "errors"], "p": S x S, "mcnemar": McNemar's exact
    test per pair, see scoring.stats.mcnemar_tests}. Cached until a submission
    is added or finishes.
    """
    return _cached_cell("benchmark-scores:v2", benchmark, part=part, dim=dim, modality=modality, compute=lambda: _pair_cell(benchmark, frame or load_frame(benchmark), part=part, dim=dim, modality=modality))


def _pair_cell(benchmark: Benchmark, frame: Frame, *, part: str, dim: str, modality: str | None) -> dict:
    mask = _cell_mask(frame, part, frame.truth[dim] != NO_LABEL, modality)
    truth = frame.truth[dim][mask]
    pred = frame.pred[dim][:, mask]
    result = compare_submissions(pred, truth, clusters=frame.clusters[mask], rounds=benchmark.bootstrap_rounds, seed=benchmark.seed)
    vote_item, vote_code = frame.votes[dim]
    in_part = _votes_in(mask, vote_item)
    rows = []
    for s, submission in enumerate(frame.submissions):
        rows.append(
            {
                "submission": submission.pk,
                "accuracy": result["accuracy"][s],
                "ci": result["ci"][s] if result["ci"] else None,
                "n": result["n"],
                "answered": result["answered"][s],
                "rank": result["rank"][s],
                "errors": int(frame.errors[s, mask].sum()),
            }
        )
    return {
        "n": result["n"],
        "chance": result["chance"],
        "ceiling": human_ceiling(vote_item[in_part], vote_code[in_part]),
        "rows": rows,
        "p": result["p"],
        "mcnemar": result["mcnemar"],
    }


def submission_figures(user, submission: Submission) -> dict:
    """{part: figures} of one submission on the parts, and at the resolution, the disclosure rule gives this user."""
    bench = submission.benchmark
    if bench.is_mos:
        return {part: disclosure.shape_mos_figures(mos_submission_breakdown(bench, submission, part=part), user, bench) for part in disclosure.submission_parts(user, bench)}
    return {part: disclosure.shape_figures(submission_breakdown(bench, submission, part=part), user, bench) for part in disclosure.submission_parts(user, bench)}


def submission_breakdown(benchmark: Benchmark, submission: Submission, *, part: str) -> dict:
    """One submission's figures per dimension on one part, at full resolution: accuracy and interval (the
    leaderboard's own, so the two pages agree), modality and confidence breakdowns, calibration."""
    frame = load_frame(benchmark)
    s = next((n for n, sub in enumerate(frame.submissions) if sub.pk == submission.pk), None)
    if s is None:  # not scored yet (a judge still running) or failed
        return {}
    out = {}
    for dim in DIMENSIONS:
        mask = _part_mask(frame, part) & (frame.truth[dim] != NO_LABEL)
        truth = frame.truth[dim][mask]
        row = item_scores(frame.pred[dim][s, mask][None, :], truth)[0]
        figures = breakdown(row, list(frame.modality[mask]), frame.confidence[dim][mask])
        ranked = scores(benchmark, part=part, dim=dim, frame=frame)["rows"][s]
        out[dim] = {
            "all": {"accuracy": ranked["accuracy"], "n": ranked["n"], "ci": ranked["ci"]},
            "answered": int((frame.pred[dim][s, mask] != NO_LABEL).sum()),
            "errors": int(frame.errors[s, mask].sum()),
            "by_modality": figures["by_modality"],
            "by_confidence": figures["by_confidence"]["all"],
            "calibration": calibration(frame.prob[dim][s, mask], truth),
        }
    return out


def _ranked_rows(benchmark: Benchmark, user, table: dict, *, table_of, figure: str, dim: str, modality: str | None) -> tuple[list[dict], dict]:
    """A leaderboard's rows in ranked order with each submission's name, team and kind, and its own private figures
    for whom the disclosure rule lets see them while the benchmark is open; and the submissions by id."""
    subs = {s.pk: s for s in Submission.objects.filter(benchmark=benchmark).select_related("team")}
    own_private = {}
    if benchmark.is_open and not benchmark.is_dev and disclosure.private_before_close(user, benchmark):
        private = table_of(benchmark, part=PRIVATE, dim=dim, modality=modality)
        own_private = {row["submission"]: {k: row[k] for k in (figure, "ci", "n")} for row in private["rows"]}
    rows = []
    for row in table["rows"]:
        sub = subs[row["submission"]]
        rows.append(
            {
                **row,
                "name": sub.display_name,
                "team": sub.team.name,
                "kind": sub.kind,
                "private": own_private.get(sub.pk),
                "created_at": sub.created_at,
                "timeouts": sub.n_timeouts,
                "failures": sub.n_errors,
            }
        )
    rows.sort(key=lambda r: (r["rank"], -(r[figure] or 0.0), r["submission"]))
    return rows, subs


def _ordered_pairs(table: dict, figure: str):
    """Every two submissions of a table as (i, j, better, other): indices into its rows, the better figure first."""
    point = [r[figure] or 0.0 for r in table["rows"]]
    for i in range(len(point)):
        for j in range(i + 1, len(point)):
            yield (i, j, i, j) if point[i] >= point[j] else (i, j, j, i)


def leaderboard(benchmark: Benchmark, user, *, dim: str, modality: str | None = None) -> dict:
    """The leaderboard as this user may see it: ranked rows on the ranked part (+ private figures for researchers while open)."""
    part = disclosure.ranked_part(benchmark)
    table = scores(benchmark, part=part, dim=dim, modality=modality)
    rows, subs = _ranked_rows(benchmark, user, table, table_of=scores, figure="accuracy", dim=dim, modality=modality)
    pairwise = {"submissions": [r["submission"] for r in table["rows"]], "p": table["p"], "mcnemar": table["mcnemar"]}
    return {"part": part, "dim": dim, "modality": modality, "n": table["n"], "chance": table["chance"], "ceiling": table["ceiling"], "rows": rows, "pairwise": pairwise, "pairs": pair_rows(table, subs)}


def pair_rows(table: dict, subs: dict) -> list[dict]:
    """Every two submissions on the same items: the paired bootstrap and McNemar's exact test side by side."""
    ids = [r["submission"] for r in table["rows"]]
    mc = table["mcnemar"]
    return [
        {
            "a": ids[first],
            "b": ids[second],
            "a_name": subs[ids[first]].display_name,
            "b_name": subs[ids[second]].display_name,
            "bootstrap_p": None if table["p"] is None else table["p"][i][j],
            "a_only": mc["discordant"][first][second],
            "b_only": mc["discordant"][second][first],
            "mcnemar_p": mc["p"][i][j],
            "mcnemar_p_holm": mc["p_holm"][i][j],
        }
        for i, j, first, second in _ordered_pairs(table, "accuracy")
    ]


def disagreements(benchmark: Benchmark, submission: Submission, *, dim: str, min_confidence: float = 4.0, limit: int = 50) -> list[dict]:
    """Dev benchmarks only: items where the submission contradicts a confident human majority."""
    if not benchmark.is_dev:
        return []
    frame = load_frame(benchmark)
    s = next((n for n, sub in enumerate(frame.submissions) if sub.pk == submission.pk), None)
    if s is None:
        return []
    truth, pred = frame.truth[dim], frame.pred[dim][s]
    confident = (truth != NO_LABEL) & (frame.confidence[dim] >= min_confidence)
    wrong = confident & (pred != NO_LABEL) & (pred != truth) & (truth != 2) & (pred != 2)
    picks = np.flatnonzero(wrong)[:limit]
    items = {i.pk: i for i in BenchmarkItem.objects.filter(pk__in=frame.item_pks[picks]).select_related("clip_a", "clip_b", "reference")}
    return [{"item": items[int(frame.item_pks[n])], "truth": int(truth[n]), "pred": int(pred[n]), "confidence": float(frame.confidence[dim][n])} for n in picks]


# --- MOS benchmarks: rated clips scored by SRCC ------------------------------------------------------------------


@dataclass
class MosFrame:
    """A MOS benchmark's clips and its scored submissions as arrays (items in position order)."""

    item_ids: list
    private: np.ndarray
    modality: np.ndarray
    mos: dict  # dim -> (N,) floats (NaN: the dimension was not rated)
    ratings: dict  # dim -> (item index per rating, value per rating)
    submissions: list
    score: dict  # dim -> S x N floats (NaN: no score)


def load_mos_frame(benchmark: Benchmark) -> MosFrame:
    items = list(BenchmarkItem.objects.filter(benchmark=benchmark).order_by("position").values_list("id", "item_id", "is_private", "modality", "labels"))
    index = {pk: n for n, (pk, *_rest) in enumerate(items)}
    mos, given = {}, {}
    for dim in DIMENSIONS:
        blocks = [(i[4] or {}).get(dim) or {} for i in items]
        mos[dim] = np.array([np.nan if b.get("mos") is None else b["mos"] for b in blocks], dtype=float)
        owner = [n for n, b in enumerate(blocks) for _ in b.get("ratings", [])]
        values = [v for b in blocks for _, v in b.get("ratings", [])]
        given[dim] = (np.array(owner, dtype=int), np.array(values, dtype=float))
    submissions = list(Submission.objects.filter(benchmark=benchmark, state=Submission.State.DONE).select_related("team").order_by("id"))
    row_of = {s.pk: n for n, s in enumerate(submissions)}
    score = {dim: np.full((len(submissions), len(items)), np.nan) for dim in DIMENSIONS}
    rows = Prediction.objects.filter(submission__in=submissions).values_list("submission_id", "item_id", "score_alignment", "score_musicality")
    for sub_id, item_pk, s_align, s_music in rows.iterator(chunk_size=5000):
        s, n = row_of[sub_id], index[item_pk]
        if s_align is not None:
            score[ALIGNMENT][s, n] = s_align
        if s_music is not None:
            score[MUSICALITY][s, n] = s_music
    return MosFrame(
        item_ids=[i[1] for i in items],
        private=np.array([i[2] for i in items], dtype=bool),
        modality=np.array([i[3] for i in items]),
        mos=mos,
        ratings=given,
        submissions=submissions,
        score=score,
    )


def mos_scores(benchmark: Benchmark, *, part: str, dim: str, modality: str | None = None, frame: MosFrame | None = None) -> dict:
    """Every scored submission of a MOS benchmark on one part and dimension (optionally one modality): SRCC with the
    clips' MOS, its interval, the paired tests and the groups (scoring.ratings.compare_correlations), and the human
    ceiling of the same clips (scoring.ratings.split_half_ceiling). Cached until a submission is added or finishes."""
    return _cached_cell("benchmark-mos:v1", benchmark, part=part, dim=dim, modality=modality, compute=lambda: _mos_cell(benchmark, frame or load_mos_frame(benchmark), part=part, dim=dim, modality=modality))


def _mos_cell(benchmark: Benchmark, frame: MosFrame, *, part: str, dim: str, modality: str | None) -> dict:
    mask = _cell_mask(frame, part, ~np.isnan(frame.mos[dim]), modality)
    result = ratings.compare_correlations(frame.score[dim][:, mask], frame.mos[dim][mask], rounds=benchmark.bootstrap_rounds, seed=benchmark.seed)
    owner, values = frame.ratings[dim]
    in_part = _votes_in(mask, owner)
    rows = [
        {"submission": sub.pk, "srcc": result["srcc"][s], "ci": result["ci"][s] if result["ci"] else None, "n": result["n"], "answered": result["answered"][s], "rank": result["rank"][s]}
        for s, sub in enumerate(frame.submissions)
    ]
    return {"n": result["n"], "ceiling": ratings.split_half_ceiling(owner[in_part], values[in_part], seed=benchmark.seed), "rows": rows, "p": result["p"]}


def mos_leaderboard(benchmark: Benchmark, user, *, dim: str, modality: str | None = None) -> dict:
    """A MOS benchmark's leaderboard as this user may see it (disclosure.shape_mos_board): ranked by SRCC on the ranked part."""
    part = disclosure.ranked_part(benchmark)
    table = mos_scores(benchmark, part=part, dim=dim, modality=modality)
    rows, subs = _ranked_rows(benchmark, user, table, table_of=mos_scores, figure="srcc", dim=dim, modality=modality)
    ids = [r["submission"] for r in table["rows"]]
    pairs = [
        {"a": ids[first], "b": ids[second], "a_name": subs[ids[first]].display_name, "b_name": subs[ids[second]].display_name, "bootstrap_p": None if table["p"] is None else table["p"][i][j]}
        for i, j, first, second in _ordered_pairs(table, "srcc")
    ]
    board = {"part": part, "dim": dim, "modality": modality, "n": table["n"], "ceiling": table["ceiling"], "rows": rows, "pairs": pairs}
    return disclosure.shape_mos_board(board, user, benchmark)


def mos_submission_breakdown(benchmark: Benchmark, submission: Submission, *, part: str) -> dict:
    """One submission's figures per dimension on one part at full resolution: the leaderboard's SRCC and interval, LCC
    and Kendall's tau on the clips it scored, and SRCC per modality ({"srcc", "n"} cells)."""
    frame = load_mos_frame(benchmark)
    s = next((n for n, sub in enumerate(frame.submissions) if sub.pk == submission.pk), None)
    if s is None:
        return {}
    out = {}
    for dim in DIMENSIONS:
        mask = _part_mask(frame, part) & ~np.isnan(frame.mos[dim])
        ranked = mos_scores(benchmark, part=part, dim=dim, frame=frame)["rows"][s]
        score, mos = frame.score[dim][s], frame.mos[dim]
        scored = mask & ~np.isnan(score)
        given = ratings.correlations(score[scored], mos[scored])
        cells = {}
        for m in MODALITIES:
            cell = scored & (frame.modality == m)
            cells[m] = {"srcc": ratings.correlations(score[cell], mos[cell])["srcc"], "n": int((mask & (frame.modality == m)).sum())}
        out[dim] = {
            "all": {"srcc": ranked["srcc"], "n": ranked["n"], "ci": ranked["ci"]},
            "answered": int(scored.sum()),
            "scored": {"lcc": given["lcc"], "ktau": given["ktau"], "n": given["n"]},
            "by_modality": cells,
        }
    return out
