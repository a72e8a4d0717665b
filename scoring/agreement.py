"""Human agreement and annotator statistics for one study (CMI-RewardBench appendix A).

Everything works on one votes frame, one row per judgment, so a study with
100,000 votes is a few vectorised group-bys rather than a loop over pairs.
Preferences are always in clip terms: `pref_<dimension>` is 1 when the pair's
stored clip_a won, whichever side each annotator happened to see it on.
Withdrawn annotators never enter the frame; researcher-excluded annotators
enter it marked `excluded` so the annotator table can still show them, but
every statistic below is computed on the included votes only.

Imported votes may name no single clip on a dimension (CMI-RewardBench's both /
neither, `<dim>_tie`); their `<dim>_choice` is -1 and `tie_any` marks them. The
statistics here are over two values (clip_a, clip_b), so the report passes them
the votes without a tie; judge accuracy scores ties as the evaluator does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import krippendorff
import numpy as np
import pandas as pd
from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Length
from scipy.stats import beta, binom, binomtest

from annotation.models import Judgment, Pair, Study
from annotation.selectors import judgments_without_seeded
from common.errors import ServiceError

from .evaluation import BUCKETS, DIMENSIONS, confidence_buckets
from .stats import bootstrap_sums, num, percentile_ci

# CMI-Pref confidences: 1.0 ... 5.0 in half steps.
CONFIDENCE_DOMAIN = np.arange(2, 11) / 2.0

VOTE_COLUMNS = [
    "judgment_id",
    "pair_id",
    "annotator_id",
    "pseudonym",
    "excluded",
    "clip_a",
    "clip_b",
    "a_clip",
    "alignment_choice",
    "musicality_choice",
    "alignment_tie",
    "musicality_tie",
    "alignment_confidence",
    "musicality_confidence",
    "time_on_page_ms",
    "heard_a",
    "heard_b",
    "rationale_length",
    "kind",
    "expected_alignment",
    "expected_musicality",
    "modality",
]


# --- Options ---------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """When an annotator gets a flag. Every flag needs `min_votes` answers first."""

    min_votes: int = 10
    # chance_agreement: agreement with the others' majority is not above 50% at this p-value.
    agreement_p: float = 0.05
    # low_gold: accuracy on gold and catch pairs below this share.
    gold_min: float = 0.7
    # side / confidence straight-lining: binomial test p-value below this.
    straightline_p: float = 0.001

    def as_dict(self) -> dict:
        return asdict(self)


THRESHOLD_HELP = {
    "min_votes": "answers an annotator needs before any flag is raised",
    "agreement_p": "flag chance-level agreement when the one-sided binomial p-value against 50% is at least this",
    "gold_min": "flag when accuracy on gold and catch pairs is below this share",
    "straightline_p": "flag same-side or same-confidence answering when the binomial p-value is below this",
}


def _parse_number(raw, name: str, kind: type, low: float, high: float):
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ServiceError(f"{name}={raw!r} is not a{'n integer' if kind is int else ' number'}.", code="bad_option") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ServiceError(f"{name} must be a finite number.", code="bad_option")
    if not low <= value <= high:
        raise ServiceError(f"{name}={raw} is out of range; use a value from {low:g} to {high:g}.", code="bad_option")
    return value


def thresholds_parse(values) -> Thresholds:
    """Thresholds from query parameters or command options; unknown values raise a readable ServiceError."""
    defaults = Thresholds()
    return Thresholds(
        min_votes=_parse_number(values.get("min_votes", defaults.min_votes), "min_votes", int, 1, 100000),
        agreement_p=_parse_number(values.get("agreement_p", defaults.agreement_p), "agreement_p", float, 0.0, 1.0),
        gold_min=_parse_number(values.get("gold_min", defaults.gold_min), "gold_min", float, 0.0, 1.0),
        straightline_p=_parse_number(values.get("straightline_p", defaults.straightline_p), "straightline_p", float, 0.0, 1.0),
    )


# --- Loading -----------------------------------------------------------------------


PAIR_COLUMNS = ["pair_id", "clip_a", "clip_b", "modality", "condition"]


def pairs_frame(*, study: Study) -> pd.DataFrame:
    """The study's pairs, one row each: its clips, modality and condition."""
    rows = Pair.objects.filter(study=study).order_by("id").values_list("id", "clip_a_id", "clip_b_id", "condition__modality", "condition_id")
    return pd.DataFrame.from_records(list(rows), columns=PAIR_COLUMNS).set_index("pair_id")


def votes_frame(*, study: Study, include_seeded: bool = False) -> pd.DataFrame:
    """Every judgment of the study by an annotator who has not withdrawn, one row each; the demo's seeded votes only when asked for."""
    judgments = Judgment.objects.filter(pair__study=study)
    if not include_seeded:
        judgments = judgments_without_seeded(judgments)
    rows = (
        judgments.exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
        .annotate(
            heard_a=Cast(KT("listening_log__A__seconds"), FloatField()),
            heard_b=Cast(KT("listening_log__B__seconds"), FloatField()),
            rationale_length=Length("rationale"),
        )
        .order_by("id")
        .values_list(
            "id",
            "pair_id",
            "annotator_id",
            "annotator__annotator_profile__pseudonym",
            "annotator__annotator_profile__excluded_at",
            "pair__clip_a_id",
            "pair__clip_b_id",
            "a_clip_id",
            "alignment_choice_id",
            "musicality_choice_id",
            "alignment_tie",
            "musicality_tie",
            "alignment_confidence",
            "musicality_confidence",
            "time_on_page_ms",
            "heard_a",
            "heard_b",
            "rationale_length",
            "pair__kind",
            "pair__expected_alignment_id",
            "pair__expected_musicality_id",
            "pair__condition__modality",
        )
    )
    frame = pd.DataFrame.from_records(list(rows), columns=VOTE_COLUMNS)
    return votes_frame_prepare(frame)


def votes_frame_prepare(frame: pd.DataFrame) -> pd.DataFrame:
    """Normalise dtypes and add the derived clip-term columns; also used on synthetic frames (tests, bench)."""
    frame = frame.copy()
    if "pseudonym" not in frame:
        frame["pseudonym"] = None
    missing = frame["pseudonym"].isna()
    # Never fall back to a username: a profile-less annotator gets a neutral label.
    frame.loc[missing, "pseudonym"] = "annotator-" + frame.loc[missing, "annotator_id"].astype(str)
    frame["pseudonym"] = frame["pseudonym"].astype(object)
    # From the database it is excluded_at (a timestamp or None); synthetic frames may pass booleans.
    excluded = frame["excluded"] if "excluded" in frame else pd.Series(False, index=frame.index)
    frame["excluded"] = excluded.fillna(False).astype(bool) if excluded.dtype == bool else excluded.notna() & (excluded != False)  # noqa: E712
    for name in ("alignment_confidence", "musicality_confidence", "time_on_page_ms", "heard_a", "heard_b", "expected_alignment", "expected_musicality"):
        if name not in frame:
            frame[name] = np.nan
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    for name, default in (("rationale_length", 0), ("kind", "regular"), ("modality", "text")):
        if name not in frame:
            frame[name] = default
    frame["rationale_length"] = frame["rationale_length"].fillna(0).astype(int)
    for dim in DIMENSIONS:
        name = f"{dim}_tie"
        frame[name] = (frame[name] if name in frame else pd.Series("", index=frame.index)).fillna("").astype(object)
        # A tie names no clip: -1 never equals a clip id.
        frame[f"{dim}_choice"] = frame[f"{dim}_choice"].where(frame[name] == "", -1)
    frame["tie_any"] = (frame["alignment_tie"] != "") | (frame["musicality_tie"] != "")
    for name in ("judgment_id", "pair_id", "annotator_id", "clip_a", "clip_b", "a_clip", "alignment_choice", "musicality_choice"):
        frame[name] = frame[name].astype(np.int64)
    for dim in DIMENSIONS:
        frame[f"pref_{dim}"] = (frame[f"{dim}_choice"] == frame["clip_a"]).astype(np.int8)
        frame[f"aside_{dim}"] = (frame[f"{dim}_choice"] == frame["a_clip"]).astype(np.int8)
    frame["heard_s"] = frame["heard_a"] + frame["heard_b"]
    return frame


# --- Agreement -------------------------------------------------------------------------

# Per-unit columns of the nominal statistics, in this order.
_UNIT_COLUMNS = ("vote_pairs", "agreements", "o00", "o01", "o11")


def nominal_unit_stats(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per pair with n >= 2 votes, k of them for clip_a: vote pairs, agreeing vote pairs, coincidences.

    The coincidences are Krippendorff's o_ck for the two values (clip_b, clip_a);
    summing them over any set of pairs gives that set's alpha (alpha_nominal_from_sums).
    """
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    m = n - k
    return np.column_stack(
        [
            n * (n - 1) / 2,
            (k * (k - 1) + m * (m - 1)) / 2,
            m * (m - 1) / (n - 1),
            k * m / (n - 1),
            k * (k - 1) / (n - 1),
        ]
    )


def alpha_nominal_from_sums(sums: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha for two values from summed unit statistics (..., 5)."""
    sums = np.asarray(sums, dtype=float)
    o00, o01, o11 = sums[..., 2], sums[..., 3], sums[..., 4]
    n0, n1 = o00 + o01, o11 + o01
    total = n0 + n1
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - (total - 1.0) * o01 / (n0 * n1)


def _alpha_package(n: np.ndarray, k: np.ndarray) -> float | None:
    if len(n) == 0:
        return None
    counts = np.column_stack([n - k, k])
    if counts.sum(axis=0).min() == 0:
        return None  # one value only: alpha is undefined
    return num(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))


def pair_counts(votes: pd.DataFrame, dim: str) -> pd.DataFrame:
    """Per pair: votes n, votes for clip_a k, mean confidence."""
    grouped = votes.groupby("pair_id", sort=True)
    return pd.DataFrame(
        {
            "n": grouped.size(),
            "k": grouped[f"pref_{dim}"].sum(),
            "confidence": grouped[f"{dim}_confidence"].mean(),
        }
    )


def _agreement_block(units: pd.DataFrame, sums: np.ndarray, boot: np.ndarray) -> dict:
    vote_pairs, agreements = sums[0], sums[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        boot_rate = boot[:, 1] / boot[:, 0]
    return {
        "pairs": int(len(units)),
        "votes": int(units["n"].sum()),
        "vote_pairs": int(round(vote_pairs)),
        "agreements": int(round(agreements)),
        "disagreements": int(round(vote_pairs - agreements)),
        "agreement_rate": num(agreements / vote_pairs) if vote_pairs else None,
        "agreement_ci": percentile_ci(boot_rate),
        "alpha": _alpha_package(units["n"].to_numpy(), units["k"].to_numpy()),
        "alpha_ci": percentile_ci(alpha_nominal_from_sums(boot)),
    }


def confidence_alpha(votes: pd.DataFrame, dim: str) -> float | None:
    """Ordinal alpha of the confidence ratings over pairs with >= 2 votes."""
    multi = votes[votes.groupby("pair_id")["pair_id"].transform("size") >= 2]
    values = multi[f"{dim}_confidence"].to_numpy()
    if len(multi) == 0 or np.isnan(values).any():
        return None
    index = np.rint(values * 2).astype(int) - 2
    pair_codes, _ = pd.factorize(multi["pair_id"], sort=True)
    counts = np.zeros((pair_codes.max() + 1, len(CONFIDENCE_DOMAIN)))
    np.add.at(counts, (pair_codes, index), 1)
    if (counts.sum(axis=0) > 0).sum() < 2:
        return None
    return num(krippendorff.alpha(value_counts=counts, value_domain=CONFIDENCE_DOMAIN, level_of_measurement="ordinal"))


def _bucket_counts(votes: pd.DataFrame, dim: str, unit_ids: pd.Index) -> list[tuple[str | None, pd.DataFrame]]:
    """Per pair: (n, k) over all its votes, then over only the votes given with confidence <3, =3, >3."""
    pref = f"pref_{dim}"
    grouped = votes.groupby("pair_id")
    parts = [(None, pd.DataFrame({"n": grouped.size(), "k": grouped[pref].sum()}).reindex(unit_ids, fill_value=0))]
    bucket = confidence_buckets(votes[f"{dim}_confidence"].to_numpy())
    for name in BUCKETS:
        sub = votes[bucket == name].groupby("pair_id")
        parts.append((name, pd.DataFrame({"n": sub.size(), "k": sub[pref].sum()}).reindex(unit_ids, fill_value=0)))
    return parts


def agreement_report(votes: pd.DataFrame, *, rounds: int = 1000, seed: int = 0) -> dict:
    """Table 6 of the paper per dimension, with bootstrap intervals, plus a breakdown by confidence.

    By confidence: the answers given with confidence <3, =3 or >3 on that
    dimension (the benchmark's bucket edges) compared among themselves, i.e. the
    vote pairs where both answers fall in the bucket. "=3" is the protocol's
    default answer, so it is the bucket to watch for habit rather than judgment.
    """
    votes = votes[~votes["excluded"]]
    sizes = votes.groupby("pair_id").size()
    unit_ids = sizes.index[sizes >= 2]
    blocks, stats_blocks = [], []
    for dim in DIMENSIONS:
        for bucket, counts in _bucket_counts(votes, dim, unit_ids):
            usable = counts["n"].to_numpy() >= 2
            stats = np.zeros((len(counts), len(_UNIT_COLUMNS)))
            if usable.any():
                stats[usable] = nominal_unit_stats(counts["n"].to_numpy()[usable], counts["k"].to_numpy()[usable])
            stats_blocks.append(stats)
            blocks.append((dim, bucket, counts[usable], stats.sum(axis=0)))
    # One resample of pairs serves every dimension and bucket, so their intervals are comparable.
    boot = bootstrap_sums(np.hstack(stats_blocks), rounds=rounds, seed=seed)
    width = len(_UNIT_COLUMNS)
    result: dict = {}
    for index, (dim, bucket, units, sums) in enumerate(blocks):
        block = _agreement_block(units, sums, boot[:, index * width : (index + 1) * width])
        if bucket is None:
            result[dim] = {**block, "by_confidence": []}
        else:
            result[dim]["by_confidence"].append({"bucket": bucket, **block})
    for dim in DIMENSIONS:
        result[dim]["confidence_alpha_ordinal"] = confidence_alpha(votes, dim)
    result["total_votes"] = int(len(votes))
    result["total_pairs"] = int(votes["pair_id"].nunique())
    result["bootstrap"] = {"rounds": rounds, "seed": seed, "unit": "pair"}
    return result


# --- Confidence, cross-dimension, position bias ---------------------------------------------


def confidence_report(votes: pd.DataFrame) -> dict:
    votes = votes[~votes["excluded"]]
    histogram = {}
    for dim in DIMENSIONS:
        values = votes[f"{dim}_confidence"].dropna()
        counts = values.value_counts()
        histogram[dim] = {
            "values": [num(v, 1) for v in CONFIDENCE_DOMAIN],
            "counts": [int(counts.get(v, 0)) for v in CONFIDENCE_DOMAIN],
            "mean": num(values.mean()) if len(values) else None,
            "buckets": {b: int((confidence_buckets(values) == b).sum()) for b in BUCKETS},
        }
    same = (votes["alignment_choice"] == votes["musicality_choice"]).to_numpy()
    cross = {
        "votes": int(len(votes)),
        "same": int(same.sum()),
        "different": int((~same).sum()),
        "agreement_rate": num(same.mean()) if len(votes) else None,
        "mean_confidence_same": {dim: num(votes.loc[same, f"{dim}_confidence"].mean()) for dim in DIMENSIONS},
        "mean_confidence_different": {dim: num(votes.loc[~same, f"{dim}_confidence"].mean()) for dim in DIMENSIONS},
    }
    return {"histogram": histogram, "cross_dimension": cross}


def _binom(k: int, n: int, p: float = 0.5, alternative: str = "two-sided") -> tuple[float | None, list]:
    if n <= 0:
        return None, [None, None]
    test = binomtest(int(k), int(n), p, alternative=alternative)
    ci = test.proportion_ci(confidence_level=0.95)
    return test.pvalue, [num(ci.low), num(ci.high)]


def position_bias(votes: pd.DataFrame) -> dict:
    """Share of answers for the clip shown as A, with a two-sided binomial test against 50%."""
    votes = votes[~votes["excluded"]]
    out = {}
    for dim in DIMENSIONS:
        n, k = len(votes), int(votes[f"aside_{dim}"].sum())
        p_value, ci = _binom(k, n)
        out[dim] = {"votes": n, "a_side": k, "share": num(k / n) if n else None, "ci": ci, "p_value": num(p_value, 6)}
    return out


# --- Annotators ----------------------------------------------------------------------------


def loo_majority_agreement(votes: pd.DataFrame, dim: str) -> pd.DataFrame:
    """Per vote: does it agree with the majority of the *other included* votes on its pair?

    Excluded annotators' votes are judged against the included majority but never
    count towards it. Votes whose others are tied, or who have no others, get NaN.
    """
    included = (~votes["excluded"]).astype(int)
    pref = votes[f"pref_{dim}"].astype(int)
    grouped = pd.DataFrame({"pair_id": votes["pair_id"], "n": included, "k": pref * included}).groupby("pair_id")
    n_others = grouped["n"].transform("sum") - included
    k_others = grouped["k"].transform("sum") - pref * included
    twice = 2 * k_others
    majority = np.where(twice > n_others, 1, np.where(twice < n_others, 0, -1))
    valid = (n_others >= 1) & (majority >= 0)
    agree = np.where(valid, (pref.to_numpy() == majority).astype(float), np.nan)
    return pd.DataFrame({"agree": agree}, index=votes.index)


def binom_two_sided_half(k, n) -> np.ndarray:
    """Exact two-sided binomial p-value against 1/2, vectorised (equals scipy's binomtest for p = 0.5)."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        tail = np.minimum(binom.cdf(k, n, 0.5), binom.sf(k - 1, n, 0.5))
    return np.where(n > 0, np.minimum(1.0, 2 * tail), np.nan)


def binom_greater(k, n, p) -> np.ndarray:
    """Exact one-sided p-value P(X >= k) for X ~ Binomial(n, p), vectorised."""
    k, n, p = np.asarray(k, dtype=float), np.asarray(n, dtype=float), np.asarray(p, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where((n > 0) & np.isfinite(p), binom.sf(k - 1, n, p), np.nan)


def clopper_pearson(k, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) interval for k successes in n, vectorised; what binomtest().proportion_ci() gives."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    alpha = 1 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)


def annotator_table(votes: pd.DataFrame, *, thresholds: Thresholds) -> list[dict]:
    """One row per annotator (pseudonym only), with the flags their answers raise.

    Every figure is a group-by over the votes and every test a vectorised
    binomial, so hundreds of annotators cost what a handful do.
    """
    if votes.empty:
        return []
    frame = votes.copy()
    frame["has_rationale"] = frame["rationale_length"] > 0
    frame["rationale_chars"] = frame["rationale_length"].where(frame["has_rationale"])
    for dim in DIMENSIONS:
        loo = loo_majority_agreement(votes, dim)["agree"]
        frame[f"loo_n_{dim}"] = loo.notna().astype(int)
        frame[f"loo_ok_{dim}"] = loo.fillna(0).astype(int)
        expected = frame[f"expected_{dim}"]
        checked = frame["kind"].isin(["gold", "catch"]) & expected.notna()
        frame[f"gold_n_{dim}"] = checked.astype(int)
        frame[f"gold_ok_{dim}"] = (checked & (frame[f"{dim}_choice"] == expected)).astype(int)
    grouped = frame.groupby("annotator_id", sort=False)
    sums = grouped[[c for c in frame.columns if c.startswith(("loo_", "gold_", "aside_"))]].sum()
    table = pd.DataFrame(
        {
            "pseudonym": grouped["pseudonym"].first(),
            "excluded": grouped["excluded"].first(),
            "votes": grouped.size(),
            "median_time_s": grouped["time_on_page_ms"].median() / 1000.0,
            "median_heard_s": grouped["heard_s"].median(),
            "rationale_rate": grouped["has_rationale"].mean(),
            "rationale_mean_length": grouped["rationale_chars"].mean(),
        }
    ).join(sums)
    n = table["votes"].to_numpy(float)
    columns: dict[str, np.ndarray] = {}
    for dim in DIMENSIONS:
        a_side = table[f"aside_{dim}"].to_numpy(float)
        columns[f"a_share_{dim}"] = a_side / n
        columns[f"a_share_low_{dim}"], columns[f"a_share_high_{dim}"] = clopper_pearson(a_side, n)
        columns[f"a_share_p_{dim}"] = binom_two_sided_half(a_side, n)
        # Modal confidence: the most used value (the lowest on ties), against the others' most used value.
        counts = pd.crosstab(frame["annotator_id"], frame[f"{dim}_confidence"]).reindex(index=table.index, columns=CONFIDENCE_DOMAIN, fill_value=0)
        own = counts.to_numpy(float)
        population = counts[~table["excluded"].to_numpy(bool)].to_numpy(float).sum(axis=0)
        others = np.clip(population[None, :] - own * (~table["excluded"].to_numpy(bool))[:, None], 0, None)
        others_n = others.sum(axis=1)
        modal_index = own.argmax(axis=1)
        modal_count = own.max(axis=1)
        answered = own.sum(axis=1)
        # Chance = how often the others use *their* most common value: a panel that mostly
        # answers 3 does not make an annotator who mostly answers 3 suspicious, while one
        # value in nearly every answer is. Laplace smoothing over the nine values.
        with np.errstate(invalid="ignore", divide="ignore"):
            chance = np.where(others_n > 0, (others.max(axis=1) + 1) / (others_n + len(CONFIDENCE_DOMAIN)), np.nan)
        columns[f"modal_confidence_{dim}"] = np.where(answered > 0, CONFIDENCE_DOMAIN[modal_index], np.nan)
        columns[f"modal_confidence_count_{dim}"] = modal_count
        columns[f"modal_confidence_answers_{dim}"] = answered
        columns[f"modal_confidence_share_{dim}"] = np.where(answered > 0, modal_count / np.maximum(answered, 1), np.nan)
        columns[f"modal_confidence_chance_{dim}"] = chance
        columns[f"modal_confidence_p_{dim}"] = binom_greater(modal_count, answered, chance)
        loo_n, loo_ok = table[f"loo_n_{dim}"].to_numpy(float), table[f"loo_ok_{dim}"].to_numpy(float)
        columns[f"majority_agreement_{dim}"] = np.where(loo_n > 0, loo_ok / np.maximum(loo_n, 1), np.nan)
    agree_n = sum(table[f"loo_n_{d}"] for d in DIMENSIONS).to_numpy(float)
    agree_ok = sum(table[f"loo_ok_{d}"] for d in DIMENSIONS).to_numpy(float)
    columns["majority_agreement_p"] = binom_greater(agree_ok, agree_n, 0.5)
    gold_n = sum(table[f"gold_n_{d}"] for d in DIMENSIONS).to_numpy(float)
    gold_ok = sum(table[f"gold_ok_{d}"] for d in DIMENSIONS).to_numpy(float)

    rows = []
    for i, (_, base) in enumerate(table.iterrows()):
        votes_n = int(base["votes"])
        row = {
            "pseudonym": base["pseudonym"],
            "excluded": bool(base["excluded"]),
            "votes": votes_n,
            "median_time_s": num(base["median_time_s"], 2),
            "median_heard_s": num(base["median_heard_s"], 2),
            "rationale_rate": num(base["rationale_rate"]),
            "rationale_mean_length": num(base["rationale_mean_length"], 1),
        }
        flags = []
        for dim in DIMENSIONS:
            row[f"overlap_{dim}"] = int(base[f"loo_n_{dim}"])
            row[f"majority_agreement_{dim}"] = num(columns[f"majority_agreement_{dim}"][i])
            a_side, p_side = int(base[f"aside_{dim}"]), columns[f"a_share_p_{dim}"][i]
            row[f"a_share_{dim}"] = num(columns[f"a_share_{dim}"][i])
            row[f"a_share_ci_{dim}"] = [num(columns[f"a_share_low_{dim}"][i]), num(columns[f"a_share_high_{dim}"][i])]
            row[f"a_share_p_{dim}"] = num(p_side, 6)
            if votes_n >= thresholds.min_votes and p_side < thresholds.straightline_p:
                flags.append({"code": "same_side", "dimension": dim, "detail": f"{dim}: chose the clip shown as A in {a_side} of {votes_n} answers (p={p_side:.2g} against 50%)"})
            row[f"modal_confidence_{dim}"] = num(columns[f"modal_confidence_{dim}"][i], 1)
            row[f"modal_confidence_share_{dim}"] = num(columns[f"modal_confidence_share_{dim}"][i])
            p_conf = columns[f"modal_confidence_p_{dim}"][i]
            row[f"modal_confidence_p_{dim}"] = num(p_conf, 6)
            answered = int(columns[f"modal_confidence_answers_{dim}"][i])
            if answered >= thresholds.min_votes and np.isfinite(p_conf) and p_conf < thresholds.straightline_p:
                flags.append(
                    {
                        "code": "same_confidence",
                        "dimension": dim,
                        "detail": f"{dim}: gave confidence {row[f'modal_confidence_{dim}']:g} in {int(columns[f'modal_confidence_count_{dim}'][i])} of {answered} answers; "
                        f"the others' most common value takes {columns[f'modal_confidence_chance_{dim}'][i]:.0%} of theirs (p={p_conf:.2g})",
                    }
                )
        overlap, agreed = int(agree_n[i]), int(agree_ok[i])
        p_chance = columns["majority_agreement_p"][i]
        row["overlap_answers"] = overlap
        row["majority_agreement"] = num(agreed / overlap) if overlap else None
        row["majority_agreement_p"] = num(p_chance, 6)
        if overlap >= thresholds.min_votes and p_chance >= thresholds.agreement_p:
            flags.append(
                {
                    "code": "chance_agreement",
                    "dimension": None,
                    "detail": f"agrees with the others' majority in {agreed} of {overlap} overlapping answers ({agreed / overlap:.0%}); not distinguishable from chance (p={p_chance:.2g})",
                }
            )
        golds, right = int(gold_n[i]), int(gold_ok[i])
        row["gold_answers"] = golds
        row["gold_accuracy"] = num(right / golds) if golds else None
        if golds >= min(thresholds.min_votes, 3) and right / golds < thresholds.gold_min:
            flags.append({"code": "low_gold", "dimension": None, "detail": f"right on {right} of {golds} gold/catch answers ({right / golds:.0%} < {thresholds.gold_min:.0%})"})
        row["flags"] = flags
        row["flag_codes"] = " ".join(sorted({f["code"] for f in flags}))
        rows.append(row)
    rows.sort(key=lambda r: (r["excluded"], -len(r["flags"]), r["pseudonym"]))
    return rows
