"""Pseudo-label runs: a judge labels pairs no one voted on, in both orders, and keeps what is position-consistent.

A pseudo-label run is a scoring run (ScoringRun.purpose = pseudo) over a pool of pairs without
votes: a study's unvoted regular pairs, or pairs given by id (an imported pool: import a
CMI-Pref JSONL whose rows carry no preferences). Each verdict is read in both orders:

- a pairwise judge (`llm_pairwise`) was asked A-B and B-A; its two answers, in screen positions,
  are `details.orders` (or are parsed again from `details.raw`);
- a per-clip judge's two orders are its two scores compared each way, with the tie rule (a tie
  picks the second clip shown), so a tie is inconsistent and a strict win is consistent.

A dimension's label is kept only when both orders name the same clip (or both say both /
neither). `bias_table` gives the judge's share of answers that pick the first clip shown ("A"), the
second ("B") and neither (both / neither), and its consistency rate, per dimension, with
bootstrap intervals resampling pairs. `pseudo_export` writes the kept labels as CMI-Pref JSONL
with `source` = PSEUDO_SOURCE.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from annotation.dataset.exporter import _audio_names, stored_pair_keys
from annotation.dataset.keys import EXPORT_KEYS, DatasetError
from common.errors import ServiceError

from .evaluation import ALIGNMENT, BOTH, DIMENSIONS, MODEL_A, MODEL_B, MUSICALITY, NEITHER, prefer
from .judges import adapter_for
from .models import ScoringRun, Verdict

# CMI-RewardBench's loader counts a row as CMI-Pref only when `source` is exactly "cmi-arena-annotation";
# pseudo-labels are training data, never benchmark data, so they carry their own label.
PSEUDO_SOURCE = "cmi-pref-pseudo"
PSEUDO_FILE = "pseudo.jsonl"
# The judge states no confidence; the scale's midpoint stands for "not stated" (the importer needs one).
PSEUDO_CONFIDENCE = "3.0"
FIRST, SECOND, TIE = "first", "second", "tie"
POSITION = {MODEL_A: FIRST, MODEL_B: SECOND, BOTH: TIE, NEITHER: TIE}


# --- Both orders -----------------------------------------------------------------------------


def _answers_from_raw(details: dict) -> dict | None:
    from .judges.audiollm import parse_cmi_answer, parse_strict_answer
    from .judges.base import JudgeOutputError

    raw = details.get("raw") or {}
    if not isinstance(raw, dict) or not {"ab", "ba"} <= set(raw):
        return None
    parse = parse_strict_answer if details.get("strict") else parse_cmi_answer
    try:
        return {order: {dim: parse(raw[order])[dim] for dim in DIMENSIONS} for order in ("ab", "ba")}
    except (ValueError, JudgeOutputError):
        # A malformed answer is a failed verdict already: it has no orders to count.
        return None


def verdict_orders(verdict: Verdict, dimensions) -> dict:
    """dimension -> (answer asked A-B, answer asked B-A), each in screen positions (first / second / tie); None where not given."""
    out = {}
    if verdict.status == Verdict.Status.FAILED:
        return dict.fromkeys(dimensions)
    details = verdict.details or {}
    answers = details.get("orders") or _answers_from_raw(details)
    for dim in dimensions:
        if answers is not None:
            first, second = answers["ab"].get(dim), answers["ba"].get(dim)
            out[dim] = (POSITION.get(first), POSITION.get(second)) if first and second else None
        else:
            a, b = getattr(verdict, f"{dim}_score_a"), getattr(verdict, f"{dim}_score_b")
            ab, ba = prefer(a, b), prefer(b, a)
            out[dim] = (POSITION[ab], POSITION[ba]) if ab and ba else None
    return out


def kept_label(orders: tuple | None) -> str | None:
    """The pair's label in stored order (model_a = clip A) when both orders agree, else None."""
    if orders is None:
        return None
    ab, ba = orders
    # Asked B-A, "first" is clip B: back in stored order.
    as_stored = {FIRST: SECOND, SECOND: FIRST, TIE: TIE}[ba]
    if ab != as_stored:
        return None
    return {FIRST: MODEL_A, SECOND: MODEL_B, TIE: BOTH}[ab]


def run_orders(run: ScoringRun) -> tuple[list[str], list[dict]]:
    dimensions = list(adapter_for(run.judge).dimensions)
    verdicts = run.verdicts.order_by("pair_id")
    return dimensions, [verdict_orders(v, dimensions) for v in verdicts]


# --- The bias table (CMI-RewardBench's Table 8) ----------------------------------------------------


def bias_table(per_pair: list[dict], dimensions, *, rounds: int = 1000, seed: int = 0) -> dict:
    """Per dimension: shares of answers picking the first clip shown (A), the second (B), neither (tie), and the consistency rate.

    Each pair gives two answers (one per order); intervals are 95% percentile bootstraps that
    resample pairs, so a pair's two answers stay together.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for dim in dimensions:
        answered = [p[dim] for p in per_pair if p.get(dim) is not None]
        n = len(answered)
        block = {"pairs": n, "answers": 2 * n, "rounds": rounds}
        if not n:
            out[dim] = {**block, **{k: None for k in ("a_share", "b_share", "tie_share", "consistency")}}
            continue
        counts = np.array([[sum(o == what for o in pair) for what in (FIRST, SECOND, TIE)] for pair in answered], dtype=float)
        consistent = np.array([kept_label(pair) is not None for pair in answered], dtype=float)
        values = np.concatenate([counts / 2.0, consistent[:, None]], axis=1)  # per pair: its shares and 0/1
        point = values.mean(axis=0)
        intervals = [None] * 4
        if rounds:
            means = values[rng.integers(0, n, (rounds, n))].mean(axis=1)
            intervals = [[float(np.percentile(means[:, k], 2.5)), float(np.percentile(means[:, k], 97.5))] for k in range(4)]
        for k, name in enumerate(("a_share", "b_share", "tie_share", "consistency")):
            block[name] = {"value": float(point[k]), "ci": intervals[k]}
        block["kept"] = int(consistent.sum())
        out[dim] = block
    return out


def run_bias(run: ScoringRun, *, rounds: int = 1000, seed: int = 0) -> dict:
    dimensions, per_pair = run_orders(run)
    return {"judge": run.judge.key, "dimensions": dimensions, "table": bias_table(per_pair, dimensions, rounds=rounds, seed=seed)}


# --- Export ------------------------------------------------------------------------------------------


def pseudo_labels(run: ScoringRun) -> list[tuple[Verdict, dict]]:
    """(verdict, dimension -> kept label) for every verdict of the run with at least one kept label."""
    dimensions = list(adapter_for(run.judge).dimensions)
    out = []
    for verdict in run.verdicts.select_related("pair__condition__reference", "pair__clip_a__system", "pair__clip_b__system").order_by("pair_id"):
        labels = {dim: kept_label(o) for dim, o in verdict_orders(verdict, dimensions).items()}
        labels = {dim: label for dim, label in labels.items() if label is not None}
        if labels:
            out.append((verdict, labels))
    return out


def pseudo_export(*, run: ScoringRun, out: Path | str) -> dict:
    """Write PSEUDO_FILE (CMI-Pref keys, one row per pair with both dimensions kept) and the audio it names into `out`.

    A CMI-Pref row carries both dimensions, so a pair kept on one dimension only is left out (and
    counted); a judge that covers one dimension cannot fill one and is refused.
    """
    if run.state != ScoringRun.State.DONE:
        raise ServiceError(f"Run {run.pk} has not finished ({run.state}).", code="run_not_done", status=409)
    dimensions = list(adapter_for(run.judge).dimensions)
    missing = [d for d in DIMENSIONS if d not in dimensions]
    if missing:
        raise ServiceError(
            f"Judge {run.judge.key} gives no {', '.join(missing)} preference; a CMI-Pref row needs both dimensions.", code="one_dimension", status=409
        )
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise DatasetError(f"{out} is not empty.", code="not_empty")
    out.mkdir(parents=True, exist_ok=True)
    labelled = pseudo_labels(run)
    complete = [(v, labels) for v, labels in labelled if all(d in labels for d in DIMENSIONS)]
    left_out = Counter(f"kept on {', '.join(sorted(labels))} only" for v, labels in labelled if len(labels) < len(DIMENSIONS))
    pairs = [v.pair for v, _ in complete]
    clips = {c.pk: c for p in pairs for c in (p.clip_a, p.clip_b, p.condition.reference) if c is not None}
    compared = {c for p in pairs for c in (p.clip_a_id, p.clip_b_id)}
    names = _audio_names(list(clips.values()), compared)
    lines = []
    for verdict, labels in complete:
        pair, condition = verdict.pair, verdict.pair.condition
        row = {
            **stored_pair_keys(pair, names),
            "user id": f"judge-{run.judge.key}",
            "preference-musicality": labels[MUSICALITY],
            "preference-alignment": labels[ALIGNMENT],
            "confidence_preference-musicality": PSEUDO_CONFIDENCE,
            "confidence_preference-alignment": PSEUDO_CONFIDENCE,
            "feedback": "",
            "source": PSEUDO_SOURCE,
            "split": "train",
            "modality": condition.modality,
        }
        lines.append(json.dumps({k: row[k] for k in EXPORT_KEYS}, ensure_ascii=False))
    lines.sort()
    (out / PSEUDO_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for clip in sorted(clips.values(), key=lambda c: names[c.pk]):
        target = out / names[clip.pk]
        target.parent.mkdir(parents=True, exist_ok=True)
        with clip.file.open("rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return {"rows": len(lines), "files": len(clips), "verdicts": run.verdicts.count(), "left_out": dict(left_out), "file": PSEUDO_FILE, "source": PSEUDO_SOURCE}


def pseudo_export_archive(*, run: ScoringRun):
    """The export as a zip in an anonymous temporary file (removed when closed), positioned at its start."""
    archive = tempfile.TemporaryFile(suffix=".zip")
    with tempfile.TemporaryDirectory(prefix="auditorium-pseudo-") as tmp:
        root = Path(tmp) / "pseudo"
        pseudo_export(run=run, out=root)
        with zipfile.ZipFile(archive, "w") as zf:
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                method = zipfile.ZIP_DEFLATED if path.suffix == ".jsonl" else zipfile.ZIP_STORED
                zf.write(path, path.relative_to(root).as_posix(), compress_type=method)
    archive.seek(0)
    return archive
