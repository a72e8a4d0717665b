"""The results section as the pages show it: rows pre-formatted and forest plots laid out.

A forest plot is drawn by the server: each row is one interval on a shared axis, placed in
percent of the plot's width, so the page scales it to any width without a script or a CDN and
without text shrinking (labels and figures are HTML beside the strip, not inside a scaled SVG).
"""

from __future__ import annotations

import math

from .results import DIMENSION_WORDS

DIMENSION_TITLES = {"alignment": "Follows the instruction", "musicality": "Musicality"}
GROUP_TITLES = {"modality": "Modality", "vocal": "Vocal or instrumental", "language": "Language (writing system)"}


def nice_ticks(low: float, high: float, *, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _fmt(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def forest(rows: list[dict], *, label: str, value: str, lower: str = "lower", upper: str = "upper", reference: float, digits: int = 2, bounds: tuple[float, float] | None = None, percent: bool = False) -> dict:
    """A forest plot's layout: per row its point and interval in percent of the axis, and the axis ticks.

    `reference` is the value of no difference (0 for strengths and differences, 0.5 for win rates);
    `bounds` fixes the axis (win rates: 0 to 1), else it spans the intervals and the reference.
    """
    values = [r[k] for r in rows for k in (value, lower, upper) if r.get(k) is not None]
    if bounds is None:
        low, high = min([*values, reference]), max([*values, reference])
        pad = (high - low) * 0.06 or 1.0
        low, high = low - pad, high + pad
    else:
        low, high = bounds
    span = high - low

    def x(v: float | None) -> float | None:
        return None if v is None else round(100 * (min(max(v, low), high) - low) / span, 2)

    scale = 100 if percent else 1
    shown = []
    for r in rows:
        point, lo, hi = r.get(value), r.get(lower), r.get(upper)
        text = _fmt(None if point is None else scale * point, 0 if percent else digits)
        if lo is not None and hi is not None:
            text += f" [{_fmt(scale * lo, 0 if percent else digits)}, {_fmt(scale * hi, 0 if percent else digits)}]"
        shown.append({"label": r[label], "x": x(point), "x_lo": x(lo), "x_hi": x(hi), "text": text, "rank": r.get("rank"), "votes": r.get("votes")})
    ticks = [{"x": x(t), "text": f"{scale * t:g}"} for t in nice_ticks(low, high)]
    return {"rows": shown, "ticks": ticks, "ref_x": x(reference), "height": 22 * len(shown)}


def _pair_rows(block: dict) -> list[dict]:
    out = []
    for row, sentence in zip(block.get("pairs", []), block.get("sentences", [])):
        out.append({**row, "label": f"{row['system_a']} vs {row['system_b']}", "sentence": sentence, "rate_fmt": _fmt(None if row["win_rate_a"] is None else 100 * row["win_rate_a"], 1)})
    return out


def _pairwise_dimension(dim: str, block: dict) -> dict:
    strengths = block.get("strengths", [])
    pairs = _pair_rows(block)
    view = {
        "dimension": dim,
        "title": DIMENSION_TITLES.get(dim, dim),
        "votes": block.get("votes", 0),
        "conditions": block.get("conditions", 0),
        "strengths": strengths,
        "pairs": pairs,
        "strength_plot": forest(strengths, label="system", value="strength", reference=0.0) if strengths else None,
        "pair_plot": forest(pairs, label="label", value="win_rate_a", reference=0.5, bounds=(0.0, 1.0), percent=True) if pairs else None,
        "groups": [],
    }
    weighted = block.get("weighted")
    if weighted:
        view["weighted"] = {"disagrees": weighted.get("disagrees", False), "strengths": weighted.get("strengths", []), "pairs": _pair_rows(weighted)}
    for group in block.get("groups", []):
        view["groups"].append({**group, "title": GROUP_TITLES.get(group["by"], group["by"]), "strengths": group.get("strengths", []), "pairs": _pair_rows(group)})
    return view


def _rating_dimension(dim: str, block: dict) -> dict:
    rows = [{**r, "label": f"{r['system_a']} − {r['system_b']}"} for r in block.get("differences", [])]
    return {
        "dimension": dim,
        "title": DIMENSION_TITLES.get(dim, dim.replace("_", " ").capitalize()),
        "differences": rows,
        "difference_plot": forest(rows, label="label", value="difference", reference=0.0) if rows else None,
    }


def _interval_text(row: dict, key: str, digits: int) -> str:
    lo, hi = row.get(f"{key}_lower"), row.get(f"{key}_upper")
    return f"{lo:.{digits}f} – {hi:.{digits}f}" if lo is not None and hi is not None else "–"


def distribution_view(block: dict | None) -> dict | None:
    """FAD and KAD per embedding judge and system, formatted, with a forest plot of FAD per judge."""
    if not block:
        return None
    judges = []
    for judge in block.get("judges", []):
        rows = []
        for r in judge["rows"]:
            rows.append(
                {
                    **r,
                    "fad_fmt": _fmt(r.get("fad"), 3),
                    "fad_ci": _interval_text(r, "fad", 3),
                    "fad_inf_fmt": _fmt(r.get("fad_inf"), 3),
                    "bias_fmt": _fmt(r.get("fad_bias"), 3),
                    "kad_fmt": _fmt(r.get("kad"), 3),
                    "kad_ci": _interval_text(r, "kad", 3),
                }
            )
        shown = [r for r in rows if r.get("fad") is not None]
        plot = forest(shown, label="system", value="fad", lower="fad_lower", upper="fad_upper", reference=0.0, digits=3) if shown else None
        judges.append({**judge, "rows": rows, "plot": plot})
    return {**block, "judges": judges}


def results_view(section: dict | None) -> dict | None:
    """The report's `systems` key laid out for the page."""
    if not section:
        return None
    dims = section.get("dimensions", {})
    distribution = distribution_view(section.get("distribution"))
    if section.get("kind") == "rating":
        return {"kind": "rating", "systems": section.get("systems", []), "dimensions": [_rating_dimension(d, b) for d, b in dims.items()], "distribution": distribution}
    return {"kind": "pairwise", "systems": section.get("systems", []), "group_min_votes": section.get("group_min_votes"), "dimensions": [_pairwise_dimension(d, b) for d, b in dims.items()], "distribution": distribution}


def compare_view(section: dict) -> dict:
    """The compare page's figures: per dimension the pair's point and interval on one axis, and where they differ most."""
    rows = []
    for dim, block in section["dimensions"].items():
        entry = {**block, "dimension": dim, "title": DIMENSION_TITLES.get(dim, dim.replace("_", " ").capitalize())}
        if section["kind"] == "pairwise":
            entry["plot"] = forest([{**block, "label": entry["title"]}], label="label", value="win_rate_a", reference=0.5, bounds=(0.0, 1.0), percent=True) if block.get("votes") else None
        else:
            entry["plot"] = forest([{**block, "label": entry["title"]}], label="label", value="difference", reference=0.0) if block.get("conditions") else None
        rows.append(entry)
    return {**section, "dimension_rows": rows}


def plan_sentence(plan: dict) -> str | None:
    """The plan in one sentence: the cheapest design in votes, and what it assumes."""
    found = [r for r in plan["rows"] if r["conditions"] is not None]
    if not found:
        return None
    best = min(found, key=lambda r: (r["total"], r["per_condition"]))
    model = plan["model"]
    words = DIMENSION_WORDS.get(plan["dimension"], plan["dimension"])
    if plan["kind"] == "pairwise":
        effect = f"{plan['system_a']} winning {100 * model['win_rate']:.0f} % of votes against {plan['system_b']} on {words}"
        unit = f"{best['per_condition']} vote{'s' if best['per_condition'] != 1 else ''} each"
    else:
        effect = f"{plan['system_a']} rated {model['difference']:+.2f} against {plan['system_b']} on {words}"
        unit = f"{best['per_condition']} rating{'s' if best['per_condition'] != 1 else ''} of each system each"
    return (
        f"To find {effect} with {100 * plan['power']:.0f} % power at α = {plan['alpha']:.3g}: "
        f"{best['conditions']} conditions with {unit}, {best['total']} {plan['unit']} in all (simulated power {100 * best['power']:.1f} %)."
    )
