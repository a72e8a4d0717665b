"""The study report: human agreement, annotators, machine vs human, disagreement triage.

`report_build` returns one JSON-safe dict (scoring.report_tables flattens it into
CSV tables); `report_compute` is the pure (DataFrame in, dict out) part that the
benchmark times. Machine-vs-human numbers are scoring.evaluation's majority view
(its rules and breakdowns), computed here on frames so a study of 100,000 votes
stays a few vectorised group-bys; imported result sets are scored by scoring.compare.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import krippendorff
import numpy as np
import pandas as pd
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, Q
from django.urls import reverse
from django.utils import timezone

from annotation.dataset.keys import export_path_names
from annotation.models import AnnotatorProfile, Judgment, Pair, Study
from annotation.questionnaire_models import QuestionnaireResponse
from annotation.questionnaire_selectors import annotators_answering, answer_filters_parse
from annotation.ratings.models import RatingSubmission
from common.crowd import INTERVALS
from common.errors import ServiceError

from . import compare
from .agreement import (
    Thresholds,
    _parse_number,
    agreement_report,
    annotator_table,
    confidence_report,
    pairs_frame,
    position_bias,
    thresholds_parse,
    votes_frame,
)
from .crowd import crowd_report
from .drift import drift_section
from .evaluation import (
    BOTH,
    BUCKETS,
    CODE,
    DIMENSIONS,
    MODALITIES,
    MODEL_A,
    MODEL_B,
    NO_LABEL,
    breakdown,
    cluster_ci,
    interval_method,
    match_scores,
    mean_or_none,
    pair_majority,
    prefers_a,
)
from .judge_diagnostics import judge_diagnostics_section
from .models import ExternalResultRow, ExternalResultSet, ScoringRun, Verdict
from .passes import passes_section
from .ratings_report import ratings_section
from .results_section import results_section
from .stats import num

CACHE_SECONDS = 600


# --- Options ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportOptions:
    thresholds: Thresholds = field(default_factory=Thresholds)
    rounds: int = 1000  # bootstrap resamples
    seed: int = 0
    triage: int = 10  # disagreements listed per judge
    include_seeded: bool = False  # the demo's seeded votes (no one listened): left out unless asked for
    # `q.<question>=<value>`: only the votes of annotators who answered so (annotation.questionnaire_selectors).
    answers: tuple = ()
    # The reliability intervals of the aggregation section (common.crowd.INTERVALS): the full fit's information
    # (milliseconds), or 200 refits per model and dimension (the older figures; seconds per thousand votes).
    crowd_interval: str = "analytic"
    # The slower arithmetic the report used before, for the benchmark to time beside the default in one run:
    # bootstrap crowd intervals, MACE by plain EM, the judges' pair-level interval drawn pair by pair.
    legacy: bool = False

    def as_dict(self) -> dict:
        shown = {
            "thresholds": self.thresholds.as_dict(),
            "bootstrap": self.rounds,
            "seed": self.seed,
            "triage": self.triage,
            "include_seeded": self.include_seeded,
            "crowd_interval": self.crowd_interval,
        }
        return shown | ({"answers": {qid: list(values) for qid, values in self.answers}} if self.answers else {})


def report_options_parse(values) -> ReportOptions:
    """Options from query parameters or command options; a bad value raises a readable ServiceError."""
    defaults = ReportOptions()
    return ReportOptions(
        thresholds=thresholds_parse(values),
        rounds=_parse_number(values.get("bootstrap", defaults.rounds), "bootstrap", int, 0, 10000),
        seed=_parse_number(values.get("seed", defaults.seed), "seed", int, 0, 2**32 - 1),
        triage=_parse_number(values.get("triage", defaults.triage), "triage", int, 0, 500),
        include_seeded=str(values.get("include_seeded", "")).strip().lower() in ("1", "true", "yes", "on"),
        answers=answer_filters_parse(values),
        crowd_interval=_crowd_interval_parse(values.get("crowd_interval", defaults.crowd_interval)),
    )


def _crowd_interval_parse(raw) -> str:
    value = str(raw).strip().lower()
    if value not in INTERVALS:
        raise ServiceError(f"crowd_interval={raw!r} is not known; use {' or '.join(INTERVALS)}.", code="bad_option")
    return value


# --- Loading ---------------------------------------------------------------------------------

VERDICT_COLUMNS = [
    "run_id",
    "pair_id",
    "status",
    "alignment_choice",
    "musicality_choice",
    "alignment_score_a",
    "alignment_score_b",
    "musicality_score_a",
    "musicality_score_b",
]


def verdicts_frame(*, study: Study) -> pd.DataFrame:
    rows = Verdict.objects.filter(pair__study=study).order_by("id").values_list(
        "run_id",
        "pair_id",
        "status",
        "alignment_choice_id",
        "musicality_choice_id",
        "alignment_score_a",
        "alignment_score_b",
        "musicality_score_a",
        "musicality_score_b",
    )
    return pd.DataFrame.from_records(list(rows), columns=VERDICT_COLUMNS)


def runs_meta(*, study: Study) -> list[dict]:
    from .reward.services import HELDOUT_LABEL

    runs = (
        ScoringRun.objects.filter(Q(study=study) | Q(verdicts__pair__study=study))
        .select_related("judge")
        .distinct()
        .order_by("judge__key", "id")
    )
    return [
        {
            "source": "run",
            "id": run.pk,
            "judge": run.judge.key,
            "judge_kind": run.judge.kind,
            "label": run.label or f"{run.judge.key} run {run.pk}",
            "template": run.template,
            "state": run.state,
            "created_at": run.created_at.isoformat(),
            # A learned judge's run on its test split: its n is the held-out pairs, not the study's.
            "held_out_only": run.label == HELDOUT_LABEL,
        }
        for run in runs
    ]


def _external_score(scores, dim: str) -> float | None:
    value = scores.get(compare.SCORE_KEYS[dim]) if isinstance(scores, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value):
        return float(value)
    return None


def external_linked_frame(*, study: Study) -> tuple[pd.DataFrame, list[dict]]:
    """Rows of imported result sets linked to this study's pairs, as verdict-like rows in clip terms.

    A row's audio_a is matched to the clip whose import path it names, so a row
    stored in the other order than the pair still predicts the right clip.
    """
    rows = ExternalResultRow.objects.filter(pair__study=study).select_related("pair__clip_a", "pair__clip_b", "result_set")

    def names(clip, path: str) -> bool:
        # The path the clip was imported under, or the one an export gives it.
        by_import = bool(clip.original_name) and clip.original_name.endswith(path)
        return by_import or export_path_names(path, sha256=clip.sha256, extension=clip.extension)

    records, sets = [], {}
    for row in rows:
        pair = row.pair
        if row.audio_a and names(pair.clip_a, row.audio_a):
            flipped = False
        elif row.audio_a and names(pair.clip_b, row.audio_a):
            flipped = True
        else:
            continue
        record = {"run_id": -row.result_set_id, "pair_id": pair.pk, "status": Verdict.Status.OK}
        for dim in DIMENSIONS:
            a, b = _external_score(row.scores_a, dim), _external_score(row.scores_b, dim)
            if flipped:
                a, b = b, a
            record[f"{dim}_score_a"], record[f"{dim}_score_b"] = a, b
            record[f"{dim}_choice"] = None
        records.append(record)
        sets[row.result_set_id] = row.result_set
    meta = [
        {"source": "external", "id": -rs.pk, "judge": rs.judge_name or rs.name, "judge_kind": "external", "label": rs.name, "template": "", "state": "imported", "created_at": rs.created_at.isoformat()}
        for rs in sets.values()
    ]
    return pd.DataFrame.from_records(records, columns=VERDICT_COLUMNS), meta


# --- Machine vs human --------------------------------------------------------------------


def human_majority(votes: pd.DataFrame, dim: str) -> pd.DataFrame:
    """Per pair (included votes only): votes for one of the clips n, for clip_a k, majority (1 = clip_a,
    0 = clip_b, 0.5 = both / neither, NaN = no majority), mean confidence of the majority side, and the
    majority's share of all labelled votes (evaluation.pair_majority)."""
    votes = votes[~votes["excluded"]]
    # Clip terms: voting for the stored clip_a is voting MODEL_A; an imported both / neither is BOTH.
    labels = np.where(votes[f"{dim}_tie"].to_numpy() != "", CODE[BOTH], np.where(votes[f"pref_{dim}"].to_numpy() == 1, CODE[MODEL_A], CODE[MODEL_B]))
    table = pair_majority(votes["pair_id"].to_numpy(), labels, votes[f"{dim}_confidence"].to_numpy(float))
    majority = np.select([table["majority"] == CODE[MODEL_A], table["majority"] == CODE[MODEL_B], table["majority"] == CODE[BOTH]], [1.0, 0.0, 0.5], np.nan)
    counts = table["counts"]
    return pd.DataFrame(
        {"n": counts[:, CODE[MODEL_A]] + counts[:, CODE[MODEL_B]], "k": counts[:, CODE[MODEL_A]], "majority": majority, "confidence": table["confidence"], "share": table["share"]},
        index=pd.Index(table["pair_id"], name="pair_id"),
    )


def judge_prefs(verdicts: pd.DataFrame, pairs: pd.DataFrame, dim: str) -> pd.Series:
    """Per verdict: 1 if the judge prefers the pair's clip_a, 0 for clip_b, NaN for no preference.

    A stored choice wins; otherwise the two scores decide with evaluation's tie rule (ties
    predict B). Only status ok counts.
    """
    clip_a = pairs["clip_a"].reindex(verdicts["pair_id"]).to_numpy()
    choice = pd.to_numeric(verdicts[f"{dim}_choice"], errors="coerce").to_numpy()
    score_a = pd.to_numeric(verdicts[f"{dim}_score_a"], errors="coerce").to_numpy()
    score_b = pd.to_numeric(verdicts[f"{dim}_score_b"], errors="coerce").to_numpy()
    pref = np.where(np.isnan(choice), prefers_a(score_a, score_b), (choice == clip_a).astype(float))
    pref = np.where(verdicts["status"].to_numpy() == Verdict.Status.OK, pref, np.nan)
    return pd.Series(pref, index=verdicts.index)


def _label_codes(prefs: pd.Series) -> np.ndarray:
    """1 / 0 / 0.5 / NaN (prefers clip_a / clip_b / both / nothing) as evaluation label codes."""
    values = prefs.to_numpy(float)
    return np.select([values == 1, values == 0, values == 0.5], [CODE[MODEL_A], CODE[MODEL_B], CODE[BOTH]], NO_LABEL)


def accuracy_breakdown(scored: pd.DataFrame, *, rounds: int, seed: int) -> dict:
    """Accuracy of one judge on one dimension against the pairs' majorities, in the report's shape.

    `scored` has one row per pair with a human majority and a judge preference: columns
    correct (the match score), modality, confidence (of the majority side). The figures are
    evaluation.breakdown's, rounded to 4 digits.
    """
    figures = breakdown(scored["correct"].to_numpy(float), scored["modality"].to_numpy(), scored["confidence"].to_numpy(float), rounds=rounds, seed=seed, digits=4)

    def cell(figure: dict) -> dict:
        return {"n": figure["n"], "accuracy": figure["accuracy"]}

    return {
        **cell(figures["all"]),
        "correct": int(scored["correct"].sum()),
        "ci": figures["all"]["ci"],
        "by_modality": {m: cell(figures["by_modality"][m]) for m in MODALITIES},
        "reference": {"with": cell(figures["ref"]), "without": cell(figures["no_ref"])},
        "type": {"instrumental": cell(figures["instrumental"]), "vocal": cell(figures["vocal"])},
        "by_confidence": {b: cell(figures["by_confidence"]["all"][b]) for b in BUCKETS},
        "w_audio": figures["w/ audio"],
        "wo_audio": figures["w/o audio"],
    }


def _alpha_counts(counts: np.ndarray) -> float | None:
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0 or counts.sum(axis=0).min() == 0:
        return None
    return num(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))


def judges_report(
    *, votes: pd.DataFrame, verdicts: pd.DataFrame, pairs: pd.DataFrame, sources: list[dict], rounds: int, seed: int, legacy: bool = False
) -> tuple[list[dict], dict[int, pd.DataFrame]]:
    """Per judge run (or linked external set): coverage, accuracy per dimension, alpha with the judge as a rater.

    Also returns, per source id, its disagreements with the human majority (for triage).
    """
    majorities = {dim: human_majority(votes, dim) for dim in DIMENSIONS}
    by_source = dict(tuple(verdicts.groupby("run_id"))) if len(verdicts) else {}
    results, disagreements = [], {}
    for source in sources:
        rows = by_source.get(source["id"], verdicts.iloc[0:0])
        statuses = rows["status"].value_counts()
        total = int(len(rows))
        entry = {
            **source,
            "verdicts": total,
            "ok": int(statuses.get(Verdict.Status.OK, 0)),
            "discarded": int(statuses.get(Verdict.Status.DISCARDED, 0)),
            "failed": int(statuses.get(Verdict.Status.FAILED, 0)),
            "dimensions": {},
        }
        entry["discard_rate"] = num(entry["discarded"] / total) if total else None
        entry["failure_rate"] = num(entry["failed"] / total) if total else None
        wrong_parts = []
        for dim in DIMENSIONS:
            majority = majorities[dim]
            pref = judge_prefs(rows, pairs, dim)
            judged = pd.DataFrame({"pair_id": rows["pair_id"].to_numpy(), "judge": pref.to_numpy()}).dropna().drop_duplicates("pair_id").set_index("pair_id")
            covered = judged.join(majority, how="inner")
            # Alpha with the judge as one more rater: every pair with a human vote and a judge answer.
            judge_vote = covered["judge"].to_numpy()
            counts = np.column_stack([covered["n"] - covered["k"] + (1 - judge_vote), covered["k"] + judge_vote])
            human_only = np.column_stack([covered["n"] - covered["k"], covered["k"]])
            scored = covered.dropna(subset=["majority"]).copy()
            scored["correct"] = match_scores(_label_codes(scored["judge"]), _label_codes(scored["majority"]))
            scored["modality"] = pairs["modality"].reindex(scored.index).to_numpy()
            block = accuracy_breakdown(scored, rounds=rounds, seed=seed)
            block.update(_cluster_interval(scored, pairs, rounds=rounds, seed=seed, pair_ci=None if legacy else block["ci"]))
            block["coverage"] = num(len(judged) / total) if total else None
            block["ties_dropped"] = int(covered["majority"].isna().sum())
            block["alpha_with_judge"] = _alpha_counts(counts)
            block["alpha_humans_same_pairs"] = _alpha_counts(human_only)
            entry["dimensions"][dim] = block
            wrong = scored[scored["correct"] == 0]
            if len(wrong):
                part = wrong[["judge", "majority", "confidence", "share", "n", "k"]].copy()
                part["dimension"] = dim
                margins = _score_margins(rows, dim)
                part["judge_margin"] = margins.reindex(part.index).to_numpy()
                wrong_parts.append(part)
        accuracies = [entry["dimensions"][d]["accuracy"] for d in DIMENSIONS]
        entry["headline"] = mean_or_none(accuracies, 4)
        results.append(entry)
        if wrong_parts:
            disagreements[source["id"]] = pd.concat(wrong_parts)
    return results, disagreements


def _cluster_interval(scored: pd.DataFrame, pairs: pd.DataFrame, *, rounds: int, seed: int, pair_ci: list | None = None) -> dict:
    """The accuracy interval resampling whole conditions (pairs when each condition has one), not pairs.

    Where every cluster is one pair, `pair_ci` (the breakdown's interval: the same percentile bootstrap of
    the same pairs, `rounds` rounds, drawn as counts of the distinct scores) is that interval: drawing
    55,000 pair indices 1,000 times gives the same distribution at a hundred times the cost. The two
    differ by Monte Carlo error only (bench/results/report-cpu.txt)."""
    if "condition" in pairs:
        clusters = pairs["condition"].reindex(scored.index).to_numpy()
        clusters = np.where(pd.isna(clusters), -np.arange(1, len(clusters) + 1), clusters)
    else:
        clusters = scored.index.to_numpy()
    codes, sizes = _codes_by_name(clusters)
    resamples = "condition" if len(sizes) and sizes.max() > 1 else "pair"
    correct = scored["correct"].to_numpy(float)
    if resamples == "pair" and pair_ci is not None and interval_method(len(sizes)) == "bootstrap":
        ci = pair_ci if rounds else [None, None]
    else:
        ci = cluster_ci(correct, codes.reshape(-1), rounds=rounds, seed=seed) if rounds else [None, None]
    return {"ci": ci, "interval": {"resamples": resamples, "clusters": int(len(sizes)), "rounds": rounds}}


def _codes_by_name(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values.astype(str), return_inverse=True, return_counts=True)[1:]: the codes follow the values'
    names in sorted order (the resampling draws by code), but only the distinct values are turned into names
    and sorted, not every pair's."""
    first, distinct = pd.factorize(values)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(np.asarray(distinct).astype(str), kind="stable")] = np.arange(len(distinct))
    codes = rank[first]
    return codes, np.bincount(codes, minlength=len(distinct))


def _score_margins(rows: pd.DataFrame, dim: str) -> pd.Series:
    a = pd.to_numeric(rows[f"{dim}_score_a"], errors="coerce")
    b = pd.to_numeric(rows[f"{dim}_score_b"], errors="coerce")
    return pd.Series((a - b).abs().to_numpy(), index=rows["pair_id"].to_numpy()).groupby(level=0).first()


def triage_select(disagreements: dict[int, pd.DataFrame], *, per_source: int) -> list[dict]:
    """The most confident human-vs-judge disagreements of each source.

    Ranked by the confidence of the human majority, then by how unanimous it
    was, then by the judge's own score margin where it has one.
    """
    picked = []
    for source_id, frame in disagreements.items():
        ranked = frame.assign(judge_margin=frame["judge_margin"].fillna(-1.0)).sort_values(
            ["confidence", "share", "n", "judge_margin"], ascending=[False, False, False, False], kind="stable"
        )
        for pair_id, row in ranked.head(per_source).iterrows():
            picked.append(
                {
                    "source_id": int(source_id),
                    "pair_id": int(pair_id),
                    "dimension": row["dimension"],
                    "human_prefers": "clip_a" if row["majority"] == 1 else "clip_b",
                    "judge_prefers": "clip_a" if row["judge"] == 1 else "clip_b",
                    "human_votes": int(row["n"]),
                    "human_majority_votes": int(max(row["k"], row["n"] - row["k"])),
                    "human_confidence": num(row["confidence"], 2),
                    "judge_margin": num(row["judge_margin"]) if row["judge_margin"] >= 0 else None,
                }
            )
    return picked


# --- External result sets on their own labels ------------------------------------------------


def external_set_summary(result_set: ExternalResultSet) -> dict:
    """An imported result set scored against the human labels published with it (scoring.compare rules)."""
    rows = [
        {"subset": compare.subset_of(subset) or subset, "scores_a": scores_a or {}, "scores_b": scores_b or {}, "human": human or {}}
        for subset, scores_a, scores_b, human in result_set.rows.order_by("row_index").values_list("subset", "scores_a", "scores_b", "human").iterator(chunk_size=2000)
    ]
    summary = {
        "id": result_set.pk,
        "name": result_set.name,
        "judge": result_set.judge_name,
        "source_file": result_set.source_file,
        "rows": len(rows),
        "published": result_set.published_summary,
        "computed": compare.external_summary(rows),
    }
    summary["figures"] = external_figures(summary)
    return summary


def _published_split(published, subset: str) -> dict:
    if not isinstance(published, dict):
        return {}
    per_split = published.get("per_split", published)
    value = per_split.get(subset) if isinstance(per_split, dict) else None
    return value if isinstance(value, dict) else {}


def external_figures(summary: dict) -> list[dict]:
    """The computed figures of one result set as flat rows, each next to the published figure where there is one."""
    rows = []
    for subset, block in summary["computed"].items():
        published = _published_split(summary.get("published"), subset)
        for dim in DIMENSIONS:
            value = block.get(dim)
            if not isinstance(value, dict):
                continue
            figure = value.get("all", value)
            key = compare.SCORE_KEYS[dim].lower()
            rows.append(
                {
                    "subset": subset,
                    "dimension": dim,
                    "metric": "accuracy",
                    "score": compare.SCORE_KEYS[dim],
                    "n": figure.get("n"),
                    "value": num(figure.get("accuracy")),
                    "published": num(published.get(f"pairwise_accuracy_{key}")),
                }
            )
        for name, value in block.items():
            if not (isinstance(value, dict) and "srcc" in value):
                continue
            score_key, _, truth = name.partition("_vs_")
            truth_dim = truth.removesuffix("_mos")
            for metric in ("srcc", "lcc", "ktau"):
                rows.append(
                    {
                        "subset": subset,
                        "dimension": truth_dim,
                        "metric": metric,
                        "score": score_key,
                        "n": value.get("n"),
                        "value": num(value.get(metric)),
                        "published": num(published.get(f"{metric}_{score_key.lower()}_vs_{truth_dim}")),
                    }
                )
    return rows


# --- Assembly ---------------------------------------------------------------------------------


def report_compute(
    *,
    votes: pd.DataFrame,
    verdicts: pd.DataFrame,
    pairs: pd.DataFrame,
    sources: list[dict],
    options: ReportOptions,
) -> tuple[dict, dict[int, pd.DataFrame]]:
    """Everything that is arithmetic on frames (no database): what the benchmark times."""
    judges, disagreements = judges_report(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, rounds=options.rounds, seed=options.seed, legacy=options.legacy)
    # Agreement, position and annotator statistics are over two values (clip_a, clip_b): votes that
    # name neither clip (imported both / neither) are left out of them; judge accuracy keeps them.
    two_valued = votes[~votes["tie_any"]]
    report = {
        "agreement": agreement_report(two_valued, rounds=options.rounds, seed=options.seed),
        "confidence": confidence_report(two_valued),
        "position_bias": position_bias(two_valued),
        "annotators": annotator_table(two_valued, thresholds=options.thresholds),
        "judges": judges,
        "crowd": crowd_report(two_valued, seed=options.seed, interval="bootstrap" if options.legacy else options.crowd_interval, accelerate=not options.legacy),
    }
    return report, disagreements


def study_fingerprint(study: Study) -> str:
    """Cheap aggregates that change whenever the report would: new votes, verdicts, exclusions, withdrawals, imports."""
    judgments = Judgment.objects.filter(pair__study=study).aggregate(n=Count("id"), last=Max("id"))
    verdicts = Verdict.objects.filter(pair__study=study).aggregate(n=Count("id"), last=Max("id"))
    people = list(
        AnnotatorProfile.objects.filter(Q(excluded_at__isnull=False) | Q(withdrawn_at__isnull=False)).order_by("pk").values_list("pk", "excluded_at", "withdrawn_at")
    )
    external = ExternalResultSet.objects.aggregate(n=Count("id"), last=Max("id"))
    rated = RatingSubmission.objects.filter(item__study=study).aggregate(n=Count("id"), last=Max("id"))
    answered = QuestionnaireResponse.objects.filter(study=study).aggregate(n=Count("id"), last=Max("id"))
    raw = json.dumps([study.pk, judgments, verdicts, people, external, Pair.objects.filter(study=study).count(), rated, answered], default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _cache_key(study: Study, options: ReportOptions) -> str:
    # The database name is part of the key: several deployments (or test databases) may share one Redis.
    raw = json.dumps([connection.settings_dict["NAME"], study_fingerprint(study), options.as_dict()], sort_keys=True, default=str)
    return f"scoring:report:{study.pk}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"


def report_build(*, study: Study, options: ReportOptions | None = None, use_cache: bool = True) -> dict:
    """The whole report for a study, as a JSON-safe dict (cached until the data changes)."""
    options = options or ReportOptions()
    key = _cache_key(study, options) if use_cache else None
    if key:
        cached = cache.get(key)
        if cached is not None:
            return cached
    votes = votes_frame(study=study, include_seeded=options.include_seeded)
    answer_filter = None
    if options.answers:
        # Restricted before anything is computed, so agreement, annotators, judges and systems all see the same people.
        answering = annotators_answering(study=study, filters=options.answers)
        votes = votes[votes["annotator_id"].isin(answering)]
        answer_filter = {"answers": {qid: list(values) for qid, values in options.answers}, "annotators": len(answering)}
    pairs = pairs_frame(study=study)
    verdicts = verdicts_frame(study=study)
    sources = runs_meta(study=study)
    linked, linked_sources = external_linked_frame(study=study)
    if len(linked):
        verdicts = pd.concat([verdicts, linked], ignore_index=True)
        sources += linked_sources
    body, disagreements = report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options)
    included = votes[~votes["excluded"]]
    report = {
        "study": {
            "name": study.name,
            "title": study.title or study.name,
            "pairs": int(len(pairs)),
            "pairs_with_votes": int(included["pair_id"].nunique()),
            "votes": int(len(included)),
            "annotators": int(included["annotator_id"].nunique()),
            "excluded_annotators": int(votes.loc[votes["excluded"], "annotator_id"].nunique()),
            "excluded_votes": int(votes["excluded"].sum()),
            "both_or_neither_votes": int(included["tie_any"].sum()),
            # Shown apart on the page: counted in the figures above only when asked for.
            "seeded_votes": Judgment.objects.filter(pair__study=study, source=Judgment.Source.SEEDED).count(),
            "seeded_included": options.include_seeded,
            "answer_filter": answer_filter,
        },
        "generated_at": timezone.now().isoformat(),
        "options": options.as_dict(),
        **body,
        "triage": triage_details(triage_select(disagreements, per_source=options.triage), sources=sources),
        "external": [external_set_summary(rs) for rs in ExternalResultSet.objects.order_by("name")],
        # Rating studies (acr, multi): MOS, agreement for scales, screening, judges against MOS.
        "ratings": ratings_section(study=study, rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded),
        # Which system won: per pair of systems and per system, on every dimension (scoring/results.py).
        "systems": results_section(study=study, votes=votes, pairs=pairs, rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded),
        # Agreement, gold accuracy and listening time by day and by recruitment batch (scoring/drift.py).
        "drift": drift_section(study=study, rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded),
        # How far the musicality answer echoes the alignment one, per way of asking (scoring/passes.py).
        "passes": passes_section(study=study, rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded),
        # Position bias, judge-by-judge agreement, AUC and calibration of the judges (scoring/judge_diagnostics.py).
        "judge_diagnostics": judge_diagnostics_section(study=study, majorities={dim: human_majority(votes, dim) for dim in DIMENSIONS}, verdicts=verdicts, pairs=pairs, sources=sources, rounds=options.rounds, seed=options.seed),
    }
    if key:
        cache.set(key, report, CACHE_SECONDS)
    return report


def _clip_info(clip) -> dict | None:
    if clip is None:
        return None
    return {
        "public_id": str(clip.public_id),
        "url": reverse("clip-audio", kwargs={"public_id": clip.public_id}),
        "system": clip.system.name if clip.system_id else None,
        "duration": num(clip.duration, 2),
    }


def triage_details(picked: list[dict], *, sources: list[dict]) -> list[dict]:
    """Add what a researcher needs to listen and judge: clips, condition, every human rationale, the judge's."""
    if not picked:
        return []
    pair_ids = {p["pair_id"] for p in picked}
    pairs = {
        p.pk: p
        for p in Pair.objects.filter(pk__in=pair_ids).select_related("condition__reference__system", "clip_a__system", "clip_b__system")
    }
    judgments: dict[int, list] = {}
    for judgment in (
        Judgment.objects.filter(pair_id__in=pair_ids, annotator__annotator_profile__withdrawn_at__isnull=True, annotator__annotator_profile__excluded_at__isnull=True)
        .select_related("annotator__annotator_profile")
        .order_by("id")
    ):
        judgments.setdefault(judgment.pair_id, []).append(judgment)
    run_ids = {p["source_id"] for p in picked if p["source_id"] > 0}
    judge_notes = {(v.run_id, v.pair_id): v.rationale for v in Verdict.objects.filter(run_id__in=run_ids, pair_id__in=pair_ids).only("run_id", "pair_id", "rationale")}
    labels = {s["id"]: s["label"] for s in sources}
    out = []
    for item in picked:
        pair = pairs.get(item["pair_id"])
        if pair is None:
            continue
        dim = item["dimension"]
        humans = []
        for judgment in judgments.get(pair.pk, []):
            choice = getattr(judgment, f"{dim}_choice_id")
            humans.append(
                {
                    "pseudonym": judgment.annotator.annotator_profile.pseudonym,
                    "prefers": getattr(judgment, f"{dim}_tie") or ("clip_a" if choice == pair.clip_a_id else "clip_b"),
                    "confidence": float(getattr(judgment, f"{dim}_confidence")),
                    "saw_clip_a_as": "A" if judgment.a_clip_id == pair.clip_a_id else "B",
                    "rationale": judgment.rationale,
                }
            )
        condition = pair.condition
        out.append(
            {
                **item,
                "source": labels.get(item["source_id"], str(item["source_id"])),
                "judge_rationale": judge_notes.get((item["source_id"], pair.pk), ""),
                "prompt": condition.prompt,
                "lyrics": condition.lyrics,
                "modality": condition.modality,
                "reference": _clip_info(condition.reference),
                "clip_a": _clip_info(pair.clip_a),
                "clip_b": _clip_info(pair.clip_b),
                "humans": humans,
            }
        )
    return out
