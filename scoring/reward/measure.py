"""One split measured: the network, the linear models and the baselines on the same rows (no database).

`measure_split` trains the network (model.train), both logistic models and the low-rank clip x
prompt model (prompted.py) on the training votes, picks per dimension the one with the best
validation accuracy (ties go to the simpler: logistic, then logistic with interactions, then the
low-rank model, then the network), scores every predictor on the test votes under
scoring.evaluation's rules, and takes the paired difference of the network to each baseline with an
interval that resamples whole test conditions. `summarise` turns several split seeds into a mean
and a spread per figure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from ..evaluation import DIMENSIONS, MAJORITY, VOTE, clustered_accuracy, paired_difference, prefer, unit_scores
from . import baselines as base
from .data import Split
from .model import FeatureTable, RewardModel, TrainConfig, Votes, train
from .prompted import fit_prompt_lowrank
from .stages import STAGE_MODELS, StageData, train_stages

CANDIDATES = ("logistic", "logistic_interactions", "prompt_lowrank", "network")  # tie order: the simpler first
PREDICTORS = ("network", "registered", *base.BASELINES)
VIEWS_MEASURED = (VOTE, MAJORITY)


@dataclass
class Measured:
    registered: RewardModel
    network: RewardModel
    picks: dict  # dimension -> candidate name
    figures: dict  # JSON-ready: validation, test, differences, baselines chosen


def _label(margin: float) -> str | None:
    return prefer(margin, 0.0) if np.isfinite(margin) else None


def _margin(model: RewardModel, table: FeatureTable, votes: Votes) -> np.ndarray:
    return model.scores(table, votes.clip_a, votes.condition) - model.scores(table, votes.clip_b, votes.condition)


def measure_split(
    table: FeatureTable,
    votes: Votes,
    rows: list[dict],
    split: Split,
    *,
    config: TrainConfig,
    seed: int,
    judge_scores: np.ndarray | None,
    feature_kind: str,
    rounds: int,
    device: str = "cpu",
    progress=None,
    stages: StageData | None = None,
) -> Measured:
    """Train and measure on one split.

    `judge_scores` is (score of clip A, score of clip B), each (n_votes, 2) over all rows: the feature
    judge's own scores per dimension under each vote's condition (NaN where it gives none), or None.
    With `stages` (pseudo-labels and/or MOS) the network is the two-stage model (stages.py) and
    stage 1 alone and stage 2 alone are measured beside the other baselines.
    """
    train_v, val_v, test_v = votes.subset(split.train), votes.subset(split.val), votes.subset(split.test)
    staged = None
    if stages is not None:
        staged = train_stages(table, train_v, val_v, stages, config=config, seed=seed, device=device, progress=progress)
        network = staged.two_stage
    else:
        network = train(table, train_v, val_v, config=config, seed=seed, device=device, progress=progress)
    mean, std = network.mean, network.std
    models = {"network": network}
    linear_about = {}
    for name in base.LINEAR:
        models[name], linear_about[name] = base.fit_logistic(table, mean, std, train_v, val_v, interactions=name == "logistic_interactions", config=config, seed=seed)
    models["prompt_lowrank"], linear_about["prompt_lowrank"] = fit_prompt_lowrank(table, mean, std, train_v, val_v, config=config, seed=seed)
    validation = {name: {dim: base.vote_accuracy(_margin(m, table, val_v)[:, j], val_v.target[:, j]) for j, dim in enumerate(DIMENSIONS)} for name, m in models.items()}
    picks = {}
    for dim in DIMENSIONS:
        scored = [(validation[n][dim] if validation[n][dim] is not None else -1.0, -k, n) for k, n in enumerate(CANDIDATES)]
        picks[dim] = max(scored)[2]
    registered = base.compose(models, picks, network)

    fit_v = votes.subset(split.train + split.val)
    names = base.feature_names(feature_kind, table.clips.shape[1])
    chosen = base.best_feature(table, mean, std, fit_v, names)
    most = base.majority(fit_v)
    margins = {
        "network": _margin(network, table, test_v),
        "registered": _margin(registered, table, test_v),
        "logistic": _margin(models["logistic"], table, test_v),
        "logistic_interactions": _margin(models["logistic_interactions"], table, test_v),
        "prompt_lowrank": _margin(models["prompt_lowrank"], table, test_v),
        "best_feature": base.best_feature_margin(table, mean, std, test_v, chosen),
        "majority": np.tile([[1.0 if most[d] == 1.0 else -1.0 for d in DIMENSIONS]], (len(test_v), 1)),
    }
    if judge_scores is not None:
        margins["judge_score"] = (judge_scores[0] - judge_scores[1])[np.asarray(split.test, dtype=int)]
    else:
        margins["judge_score"] = np.full((len(test_v), len(DIMENSIONS)), np.nan)
    predictors = PREDICTORS
    if staged is not None:
        predictors = PREDICTORS + STAGE_MODELS
        for name in STAGE_MODELS:
            model = getattr(staged, name)
            margins[name] = _margin(model, table, test_v) if model is not None else np.full((len(test_v), len(DIMENSIONS)), np.nan)
            if name == "stage1_only" and model is not None:
                # A dimension the pseudo-labels did not cover was never trained: no prediction, not "B".
                for j, dim in enumerate(DIMENSIONS):
                    if model.best_epoch.get(dim) == 0:
                        margins[name][:, j] = np.nan
    test_rows = []
    for i, index in enumerate(split.test):
        row = dict(rows[index])
        for name, m in margins.items():
            key = "pred" if name == "registered" else name
            for j, dim in enumerate(DIMENSIONS):
                row[f"{key}_{dim}"] = _label(m[i, j])
        test_rows.append(row)
    keys = {name: "pred" if name == "registered" else name for name in predictors}
    test, differences, registered_differences = {}, {}, {}
    for view in VIEWS_MEASURED:
        test[view] = {}
        for dim in DIMENSIONS:
            units = unit_scores(test_rows, dim, view=view, predictors=tuple(keys.values()))
            test[view][dim] = {name: clustered_accuracy(units, keys[name], rounds=rounds, seed=seed) for name in predictors}
            if view == VOTE:
                differences[dim] = {name: paired_difference(units, "network", keys[name], rounds=rounds, seed=seed) for name in predictors if name != "network"}
                registered_differences[dim] = {name: paired_difference(units, "pred", keys[name], rounds=rounds, seed=seed) for name in predictors if name != "registered"}
    figures = {
        "split_seed": split.info["seed"],
        "split": split.info,
        "validation": validation,
        "picks": picks,
        "linear": linear_about,
        "best_feature": chosen,
        "majority": {d: "model_a" if most[d] == 1.0 else "model_b" for d in DIMENSIONS},
        "test": test,
        "differences": differences,
        "registered_differences": registered_differences,
    }
    if staged is not None:
        figures["stages"] = {
            "network": "two-stage" if stages.pseudo is not None and len(stages.pseudo) else "stage 2 (expert votes and MOS)",
            "stage1_votes": len(stages.pseudo) if stages.pseudo is not None else 0,
            "stage2_votes": len(train_v),
            "mos_clips": len(stages.mos) if stages.mos is not None else 0,
            "smoothing": stages.smoothing,
        }
    return Measured(registered=registered, network=network, picks=picks, figures=figures)


def _spread(values: list) -> dict:
    present = [v for v in values if v is not None]
    return {
        "mean": statistics.fmean(present) if present else None,
        "sd": statistics.stdev(present) if len(present) > 1 else None,
        "min": min(present) if present else None,
        "max": max(present) if present else None,
        "values": values,
        "seeds": len(present),
    }


def summarise(per_seed: list[dict]) -> dict:
    """Mean and spread over split seeds, per dimension: the network, the registered pick, each baseline, each difference."""
    out = {"seeds": [s["split_seed"] for s in per_seed], "single_seed": len(per_seed) == 1, "dimensions": {}}
    extra = tuple(name for name in STAGE_MODELS if name in per_seed[0]["test"][VOTE][DIMENSIONS[0]])
    for dim in DIMENSIONS:
        vote = [s["test"][VOTE][dim] for s in per_seed]
        block = {
            "model": _spread([v["network"]["accuracy"] for v in vote]),
            "registered": _spread([v["registered"]["accuracy"] for v in vote]),
            "picks": [s["picks"][dim] for s in per_seed],
            "majority_view": {name: _spread([s["test"][MAJORITY][dim][name]["accuracy"] for s in per_seed]) for name in ("network", "registered")},
            "baselines": {name: _spread([v[name]["accuracy"] for v in vote]) for name in base.BASELINES + extra},
            "differences": {},
            "coverage": {name: [v[name]["coverage"] for v in vote] for name in PREDICTORS + extra},
            "n": [v["network"]["n"] for v in vote],
            "ci": [v["network"]["ci"] for v in vote],
        }
        for name in base.BASELINES + extra + ("registered",):
            diffs = [s["differences"][dim][name] for s in per_seed]
            block["differences"][name] = {**_spread([d["difference"] for d in diffs]), "ci": [d["ci"] for d in diffs], "n": [d["n"] for d in diffs]}
        out["dimensions"][dim] = block
    return out
