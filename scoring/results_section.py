"""The report's results section read from the database: the votes (or ratings) with each clip's system and its condition's tags.

Arithmetic is scoring/results.py's; this module only reads. The votes are the report's own
(withdrawn annotators out, excluded annotators' votes out, seeded demo votes only when asked).
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd

from annotation.models import Clip, Condition, Study

from . import results
from .distribution import ROUNDS as DISTRIBUTION_ROUNDS
from .distribution import distribution_section
from .evaluation import DIMENSIONS

# Writing systems, as a stand-in for the language of a condition's lyrics (or prompt, for instrumentals).
_SCRIPTS = (("CJK", "cjk"), ("HIRAGANA", "japanese"), ("KATAKANA", "japanese"), ("HANGUL", "korean"), ("CYRILLIC", "cyrillic"), ("ARABIC", "arabic"), ("HEBREW", "hebrew"), ("DEVANAGARI", "devanagari"), ("GREEK", "greek"), ("THAI", "thai"), ("LATIN", "latin"))


def script_of(text: str) -> str:
    """The writing system most of the text's letters are in (Japanese kana win over shared CJK ideographs); 'none' without letters."""
    counts: dict[str, int] = {}
    for char in text:
        if not char.isalpha():
            continue
        name = unicodedata.name(char, "")
        for prefix, script in _SCRIPTS:
            if name.startswith(prefix) or f" {prefix}" in name[:20]:
                counts[script] = counts.get(script, 0) + 1
                break
    if not counts:
        return "none"
    if counts.get("japanese"):
        return "japanese"
    return max(sorted(counts), key=counts.get)


def condition_tags(condition_ids) -> pd.DataFrame:
    rows = Condition.objects.filter(pk__in=list(condition_ids)).values_list("id", "prompt", "lyrics", "modality")
    records = [
        {"condition": pk, "vocal": "vocal" if lyrics.strip() else "instrumental", "language": script_of(lyrics if lyrics.strip() else prompt), "modality": modality}
        for pk, prompt, lyrics, modality in rows
    ]
    return pd.DataFrame.from_records(records, columns=["condition", "vocal", "language", "modality"])


def pairwise_frame(votes: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per counted vote: the two clips' systems, the condition and its tags, a score per dimension."""
    votes = votes[~votes["excluded"]]
    if votes.empty:
        return pd.DataFrame(columns=["pair_id", "annotator", "system_a", "system_b", "condition", "vocal", "language", "modality", *[f"score_{d}" for d in DIMENSIONS]])
    clip_ids = set(votes["clip_a"]) | set(votes["clip_b"])
    systems = dict(Clip.objects.filter(pk__in=clip_ids).values_list("id", "system__name"))
    frame = pd.DataFrame(
        {
            "pair_id": votes["pair_id"].to_numpy(),
            "annotator": votes["annotator_id"].to_numpy(),
            "system_a": votes["clip_a"].map(systems).to_numpy(),
            "system_b": votes["clip_b"].map(systems).to_numpy(),
            "condition": votes["pair_id"].map(pairs["condition"]).to_numpy(),
        }
    )
    for dim in DIMENSIONS:
        choice, tie = votes[f"{dim}_choice"].to_numpy(), votes[f"{dim}_tie"].to_numpy()
        score = np.where(choice == votes["clip_a"].to_numpy(), 1.0, np.where(choice == votes["clip_b"].to_numpy(), 0.0, np.nan))
        frame[f"score_{dim}"] = np.where(tie != "", 0.5, score)
    tags = condition_tags(frame["condition"].unique())
    return frame.merge(tags, on="condition", how="left")


def ratings_results_frame(ratings: pd.DataFrame) -> pd.DataFrame:
    """The ratings of test clips with their item's condition."""
    from annotation.ratings.models import RatingItem

    if ratings.empty:
        return pd.DataFrame(columns=["system", "condition", "dimension", "value"])
    test = ratings[ratings["role"] == "test"]
    conditions = dict(RatingItem.objects.filter(pk__in=test["item_id"].unique().tolist()).values_list("id", "condition_id"))
    return pd.DataFrame({"system": test["system"].to_numpy(), "condition": test["item_id"].map(conditions).to_numpy(), "dimension": test["dimension"].to_numpy(), "value": test["value"].to_numpy(float)})


def results_section(*, study: Study, votes: pd.DataFrame, pairs: pd.DataFrame, rounds: int, seed: int, include_seeded: bool = False) -> dict:
    """Which system won, for a pairwise or a rating study."""
    from annotation.ratings.models import RatingTask

    task = RatingTask.objects.filter(study=study).first()
    if task is not None:
        from .ratings_report import ratings_frame

        section = results.rating_section(ratings_results_frame(ratings_frame(study=study, include_seeded=include_seeded)), dimensions=list(task.dimensions))
    else:
        section = results.pairwise_section(pairwise_frame(votes, pairs), rounds=rounds, seed=seed)
    # FAD and KAD resample clips: one FAD per resample costs far more than a win rate, hence the cap.
    section["distribution"] = distribution_section(study=study, rounds=min(rounds, DISTRIBUTION_ROUNDS), seed=seed)
    return section


# --- Two systems side by side -------------------------------------------------------------

COMPARE_LISTEN = 8


def _study_frames(*, study: Study, include_seeded: bool):
    """The study's counted votes as results frames, or its ratings: (kind, frame, task dimensions)."""
    from annotation.ratings.models import RatingTask

    from .agreement import pairs_frame, votes_frame

    task = RatingTask.objects.filter(study=study).first()
    if task is not None:
        from .ratings_report import ratings_frame

        return "rating", ratings_results_frame(ratings_frame(study=study, include_seeded=include_seeded)), list(task.dimensions)
    return "pairwise", pairwise_frame(votes_frame(study=study, include_seeded=include_seeded), pairs_frame(study=study)), list(DIMENSIONS)


def study_systems(*, study: Study) -> list[str]:
    """The systems whose clips the study plays, for the compare and plan forms."""
    from annotation.selectors import study_system_names

    return study_system_names(study=study)


def _conditions_info(condition_ids) -> dict[int, dict]:
    return {pk: {"condition": pk, "prompt": prompt, "lyrics": lyrics, "modality": modality} for pk, prompt, lyrics, modality in Condition.objects.filter(pk__in=list(condition_ids)).values_list("id", "prompt", "lyrics", "modality")}


def _listen(clip_id: int | None) -> dict | None:
    """A clip to play on the compare page: its audio route answers only readers of the study (annotation.access)."""
    if clip_id is None:
        return None
    from django.urls import reverse

    public_id = Clip.objects.filter(pk=clip_id).values_list("public_id", flat=True).first()
    return {"public_id": str(public_id), "url": reverse("clip-audio", kwargs={"public_id": public_id})} if public_id else None


def _pair_clips(study: Study, condition_ids, a: str, b: str) -> dict[int, tuple[int, int]]:
    """Per condition, one pair's clip of system a and clip of system b."""
    found: dict[int, tuple[int, int]] = {}
    rows = study.pairs.filter(condition_id__in=list(condition_ids)).values_list("condition_id", "clip_a_id", "clip_a__system__name", "clip_b_id", "clip_b__system__name").order_by("pk")
    for condition, clip_a, sys_a, clip_b, sys_b in rows:
        if condition in found:
            continue
        if (sys_a, sys_b) == (a, b):
            found[condition] = (clip_a, clip_b)
        elif (sys_a, sys_b) == (b, a):
            found[condition] = (clip_b, clip_a)
    return found


def _rated_clips(study: Study, condition_ids, a: str, b: str) -> dict[int, tuple[int | None, int | None]]:
    from annotation.ratings.models import RatingItemClip

    found: dict[int, list] = {}
    rows = RatingItemClip.objects.filter(item__study=study, item__condition_id__in=list(condition_ids), role="test", clip__system__name__in=[a, b]).values_list("item__condition_id", "clip_id", "clip__system__name").order_by("pk")
    for condition, clip, system in rows:
        slot = found.setdefault(condition, [None, None])
        k = 0 if system == a else 1
        if slot[k] is None:
            slot[k] = clip
    return {c: (s[0], s[1]) for c, s in found.items()}


def compare_section(*, study: Study, a: str, b: str, rounds: int, seed: int, include_seeded: bool = False, listen: int = COMPARE_LISTEN) -> dict:
    """System a against system b: the paired figures per dimension and group, and the conditions where they differ most, each listenable."""
    from common.errors import ServiceError

    systems = study_systems(study=study)
    for name in (a, b):
        if not name:
            raise ServiceError("Choose two systems to compare (parameters a and b).", code="systems_missing", status=400)
        if name not in systems:
            raise ServiceError(f"No system {name!r} in study {study.name}; its systems are: {', '.join(systems) or 'none'}.", code="unknown_system", status=400)
    if a == b:
        raise ServiceError("Choose two different systems.", code="same_system", status=400)
    kind, frame, dimensions = _study_frames(study=study, include_seeded=include_seeded)
    out = {"kind": kind, "system_a": a, "system_b": b, "level": results.LEVEL, "dimensions": {}}
    for dim in dimensions:
        if kind == "pairwise":
            entry = results.compare_systems(frame, a, b, dim, rounds=rounds, seed=seed)
            entry["sentence"] = results.pair_sentence(entry, dim, corrected=False) if entry.get("votes") else None
            entry["groups"] = _compare_groups(frame, a, b, dim, rounds=rounds, seed=seed)
            table = results.per_condition(frame, a, b, dim).head(listen)
            clips = _pair_clips(study, table["condition"], a, b)
            shown = [{"votes": int(r.votes), "win_rate_a": results._round(r.win_rate_a), "clips": clips.get(int(r.condition))} for r in table.itertuples()]
            conditions = list(table["condition"])
        else:
            entry = _rating_pair(frame, a, b, dim)
            table = results.rating_per_condition(frame, a, b, dim).head(listen)
            clips = _rated_clips(study, table["condition"], a, b)
            shown = [{"mean_a": results._round(r.mean_a), "mean_b": results._round(r.mean_b), "difference": results._round(r.difference), "clips": clips.get(int(r.condition))} for r in table.itertuples()]
            conditions = list(table["condition"])
        info = _conditions_info(conditions)
        entry["differ_most"] = [
            {**info.get(int(c), {"condition": int(c)}), **{k: v for k, v in row.items() if k != "clips"}, "clip_a": _listen(row["clips"][0] if row["clips"] else None), "clip_b": _listen(row["clips"][1] if row["clips"] else None)}
            for c, row in zip(conditions, shown)
        ]
        out["dimensions"][dim] = entry
    return out


def _compare_groups(frame: pd.DataFrame, a: str, b: str, dim: str, *, rounds: int, seed: int) -> list[dict]:
    groups = []
    mask = ((frame["system_a"] == a) & (frame["system_b"] == b)) | ((frame["system_a"] == b) & (frame["system_b"] == a))
    met = frame[mask]
    for column in ("modality", "vocal", "language"):
        if column not in met:
            continue
        for value, part in met.groupby(column, sort=True):
            n = int(part[f"score_{dim}"].notna().sum())
            group = {"by": column, "value": str(value), "votes": n}
            if n >= results.GROUP_MIN_VOTES:
                row = results.compare_systems(part, a, b, dim, rounds=rounds, seed=seed)
                group.update({k: row.get(k) for k in ("win_rate_a", "lower", "upper", "p", "conditions")})
            else:
                group["note"] = f"fewer than {results.GROUP_MIN_VOTES} votes: no results"
            groups.append(group)
    return groups


def _rating_pair(frame: pd.DataFrame, a: str, b: str, dim: str) -> dict:
    section = results.rating_section(frame[frame["system"].isin([a, b])], dimensions=[dim])
    rows = section["dimensions"][dim]["differences"]
    if not rows:
        return {"system_a": a, "system_b": b, "dimension": dim, "conditions": 0, "sentence": None}
    row = rows[0]
    if row["system_a"] != a:
        # rating_section orders the two by name; the page asked for a first.
        row = {**row, "system_a": a, "system_b": b, "difference": -row["difference"], "lower": None if row["upper"] is None else -row["upper"], "upper": None if row["lower"] is None else -row["lower"]}
    return {**row, "dimension": dim, "sentence": results.rating_sentence(row, dim, corrected=False)}


# --- Planning the next study ----------------------------------------------------------------


def _number(value, name: str, low: float, high: float, *, inclusive: bool = False) -> float | None:
    from common.errors import ServiceError

    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ServiceError(f"{name} must be a number, not {str(value)[:40]!r}.", code="bad_number", status=400) from None
    inside = low <= number <= high if inclusive else low < number < high
    if not (np.isfinite(number) and inside):
        raise ServiceError(f"{name} must lie {'from' if inclusive else 'strictly between'} {low:g} {'to' if inclusive else 'and'} {high:g}; it was {number:g}.", code="out_of_range", status=400)
    return number


def plan_section(*, study: Study, a: str, b: str, dimension: str, effect=None, condition_sd=None, tie_rate=None, rating_sd=None, power=None, alpha=None, include_seeded: bool = False, seed: int = 0) -> dict:
    """How many conditions and votes separate a from b: the model fitted to the study's votes so far (its pilot), or an effect the researcher types.

    `effect` is a's win rate over b (pairwise) or a's mean rating minus b's (rating); typed
    parameters replace the fitted ones and the rest stay the pilot's.
    """
    from common.errors import ServiceError

    from . import planner

    systems = study_systems(study=study)
    for name in (a, b):
        if name not in systems:
            raise ServiceError(f"No system {name!r} in study {study.name}; its systems are: {', '.join(systems) or 'none'}.", code="unknown_system", status=400)
    if a == b:
        raise ServiceError("Choose two different systems.", code="same_system", status=400)
    kind, frame, dimensions = _study_frames(study=study, include_seeded=include_seeded)
    if dimension not in dimensions:
        raise ServiceError(f"No dimension {dimension!r} in study {study.name}; its dimensions are: {', '.join(dimensions)}.", code="unknown_dimension", status=400)
    target = _number(power, "power", 0.5, 1.0) or planner.POWER
    comparisons = max(1, len(systems) * (len(systems) - 1) // 2)
    level = _number(alpha, "alpha", 0.0, 0.5) or planner.ALPHA / comparisons
    spread = _number(condition_sd, "condition_sd", 0.0, 5.0, inclusive=True)
    if kind == "pairwise":
        typed = _number(effect, "effect (a's win rate over b)", 0.0, 1.0)
        fitted = planner.fit_pairwise(frame, a, b, dimension)
        ties = _number(tie_rate, "tie_rate", 0.0, 0.9, inclusive=True)
        if fitted is None and typed is None:
            raise ServiceError(f"{a} and {b} have no votes between them on {dimension} yet: type the win rate to plan for (effect, e.g. 0.6).", code="no_pilot", status=400)
        base = fitted or planner.PairwiseModel(win_rate=typed, condition_sd=planner.DEFAULT_CONDITION_SD, tie_rate=0.0)
        model = planner.PairwiseModel(
            win_rate=typed if typed is not None else base.win_rate,
            condition_sd=spread if spread is not None else base.condition_sd,
            tie_rate=ties if ties is not None else base.tie_rate,
            source="pilot" if fitted is not None and typed is None and spread is None and ties is None else ("typed" if fitted is None else "pilot, with typed values"),
        )
    else:
        typed = _number(effect, "effect (a's mean rating minus b's)", -1e6, 1e6)
        fitted = planner.fit_rating(frame, a, b, dimension)
        noise = _number(rating_sd, "rating_sd", 0.0, 1e6)
        if fitted is None and (typed is None or noise is None):
            raise ServiceError(f"{a} and {b} were not rated on the same condition on {dimension} yet: type the difference to plan for (effect) and the rating spread (rating_sd).", code="no_pilot", status=400)
        base = fitted or planner.RatingModel(difference=typed, condition_sd=0.0, rating_sd=noise)
        model = planner.RatingModel(
            difference=typed if typed is not None else base.difference,
            condition_sd=spread if spread is not None else base.condition_sd,
            rating_sd=noise if noise is not None else base.rating_sd,
            source="pilot" if fitted is not None and typed is None and spread is None and noise is None else ("typed" if fitted is None else "pilot, with typed values"),
        )
    out = planner.plan(model, power=target, alpha=level, seed=seed)
    pilot = None
    if fitted is not None:
        pilot = {"model": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in vars(fitted).items()}}
    return {**out, "study": study.name, "system_a": a, "system_b": b, "dimension": dimension, "comparisons": comparisons, "pilot": pilot}
