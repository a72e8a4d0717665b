"""The study report as flat tables, one CSV each (the report API's downloads and `manage.py report --table`)."""

from __future__ import annotations

from common.csvfile import csv_text

from .evaluation import DIMENSIONS

TABLES = (
    "agreement",
    "agreement_by_confidence",
    "confidence_histogram",
    "cross_dimension",
    "position_bias",
    "annotators",
    "judges",
    "judge_breakdown",
    "triage",
    "external",
    "aggregate_labels",
    "annotator_reliability",
    "confidence_calibration",
    "system_pairs",
    "system_strengths",
    "system_differences",
    "system_distribution",
)


def _ci(prefix: str, ci) -> dict:
    low, high = ci if ci else (None, None)
    return {f"{prefix}_low": low, f"{prefix}_high": high}


def report_tables(report: dict) -> dict[str, list[dict]]:
    """Every table of the report as a list of flat rows (one CSV each)."""
    agreement = report["agreement"]
    tables: dict[str, list[dict]] = {name: [] for name in TABLES}
    for dim in DIMENSIONS:
        block = agreement[dim]
        tables["agreement"].append(
            {
                "dimension": dim,
                **{k: block[k] for k in ("pairs", "votes", "vote_pairs", "agreements", "disagreements", "agreement_rate")},
                **_ci("agreement_ci", block["agreement_ci"]),
                "alpha": block["alpha"],
                **_ci("alpha_ci", block["alpha_ci"]),
                "confidence_alpha_ordinal": block["confidence_alpha_ordinal"],
            }
        )
        for row in block["by_confidence"]:
            tables["agreement_by_confidence"].append(
                {
                    "dimension": dim,
                    "bucket": row["bucket"],
                    **{k: row[k] for k in ("pairs", "votes", "vote_pairs", "agreements", "disagreements", "agreement_rate")},
                    **_ci("agreement_ci", row["agreement_ci"]),
                    "alpha": row["alpha"],
                    **_ci("alpha_ci", row["alpha_ci"]),
                }
            )
        histogram = report["confidence"]["histogram"][dim]
        for value, count in zip(histogram["values"], histogram["counts"], strict=True):
            tables["confidence_histogram"].append({"dimension": dim, "confidence": value, "votes": count})
        bias = report["position_bias"][dim]
        tables["position_bias"].append({"dimension": dim, "votes": bias["votes"], "a_side": bias["a_side"], "share": bias["share"], **_ci("ci", bias["ci"]), "p_value": bias["p_value"]})
    cross = report["confidence"]["cross_dimension"]
    tables["cross_dimension"].append(
        {
            "votes": cross["votes"],
            "same": cross["same"],
            "different": cross["different"],
            "agreement_rate": cross["agreement_rate"],
            **{f"mean_confidence_same_{d}": cross["mean_confidence_same"][d] for d in DIMENSIONS},
            **{f"mean_confidence_different_{d}": cross["mean_confidence_different"][d] for d in DIMENSIONS},
        }
    )
    for row in report["annotators"]:
        flat = {}
        for key, value in row.items():
            if key == "flags":
                flat["flag_details"] = " | ".join(f["detail"] for f in value)
            elif isinstance(value, list):
                flat.update(_ci(key, value))
            else:
                flat[key] = value
        tables["annotators"].append(flat)
    for judge in report["judges"]:
        head = {k: judge[k] for k in ("source", "id", "judge", "label", "state")}
        for dim in DIMENSIONS:
            block = judge["dimensions"].get(dim, {})
            tables["judges"].append(
                {
                    **head,
                    "dimension": dim,
                    "n": block.get("n"),
                    "accuracy": block.get("accuracy"),
                    **_ci("ci", block.get("ci")),
                    "w_audio": block.get("w_audio"),
                    "wo_audio": block.get("wo_audio"),
                    "headline": judge["headline"],
                    "coverage": block.get("coverage"),
                    "ties_dropped": block.get("ties_dropped"),
                    "ci_resamples": (block.get("interval") or {}).get("resamples"),
                    "held_out_only": judge.get("held_out_only", False),
                    "verdicts": judge["verdicts"],
                    "discarded": judge["discarded"],
                    "failed": judge["failed"],
                    "discard_rate": judge["discard_rate"],
                    "alpha_with_judge": block.get("alpha_with_judge"),
                    "alpha_humans_same_pairs": block.get("alpha_humans_same_pairs"),
                }
            )
            groups = [("modality", block.get("by_modality", {})), ("reference", block.get("reference", {})), ("type", block.get("type", {})), ("confidence", block.get("by_confidence", {}))]
            for group, levels in groups:
                for level, value in levels.items():
                    tables["judge_breakdown"].append({**head, "dimension": dim, "group": group, "level": level, "n": value["n"], "accuracy": value["accuracy"]})
    for item in report["triage"]:
        tables["triage"].append(
            {
                "source": item["source"],
                "pair_id": item["pair_id"],
                "dimension": item["dimension"],
                "human_prefers": item["human_prefers"],
                "judge_prefers": item["judge_prefers"],
                "human_votes": item["human_votes"],
                "human_majority_votes": item["human_majority_votes"],
                "human_confidence": item["human_confidence"],
                "judge_margin": item["judge_margin"],
                "prompt": item["prompt"],
                "clip_a": (item["clip_a"] or {}).get("public_id"),
                "clip_b": (item["clip_b"] or {}).get("public_id"),
                "human_rationales": " | ".join(f"{h['pseudonym']}: {h['rationale']}" for h in item["humans"] if h["rationale"]),
                "judge_rationale": item["judge_rationale"],
            }
        )
    for result_set in report["external"]:
        for figure in result_set["figures"]:
            tables["external"].append({"result_set": result_set["name"], "judge": result_set["judge"], **figure})
    crowd = report.get("crowd") or {}
    tables["aggregate_labels"] = list(crowd.get("labels", []))
    for person in crowd.get("annotators", []):
        for dim, methods in person["dimensions"].items():
            row = {"pseudonym": person["pseudonym"], "votes": person["votes"], "dimension": dim}
            for method, figure in methods.items():
                row[f"reliability_{method}"] = figure["estimate"]
                row.update(_ci(f"reliability_{method}_ci", figure["ci"]))
            tables["annotator_reliability"].append(row)
        for dim, cells in person["calibration"].items():
            for cell in cells:
                tables["confidence_calibration"].append({"pseudonym": person["pseudonym"], "dimension": dim, "confidence_level": cell["level"], "votes": cell["n"], "agree_with_dawid_skene": cell["agree"], "rate": cell["rate"]})
    _system_tables(report.get("systems"), tables)
    return tables


def _system_tables(systems: dict | None, tables: dict) -> None:
    """The results section: win rates and strengths (pairwise studies), paired differences (rating studies)."""
    if not systems:
        return
    distribution = systems.get("distribution") or {}
    for judge in distribution.get("judges", []):
        for row in judge["rows"]:
            tables["system_distribution"].append({"judge": judge["judge"], "kind": judge["kind"], "version": judge["version"], "reference": distribution["reference"], **{k: v for k, v in row.items() if k not in ("rounds", "seed", "level")}})
    for dim, block in systems["dimensions"].items():
        if systems["kind"] == "rating":
            tables["system_differences"] += [{"dimension": dim, **row} for row in block["differences"]]
            continue
        variants = [("plain", block)] + ([("reliability_weighted", block["weighted"])] if block.get("weighted") else [])
        groups = [(g["by"], g["value"], g) for g in block.get("groups", []) if g.get("pairs") is not None]
        for weighting, part in variants:
            for by, value, entry in [("all", "all", part)] + ([] if weighting != "plain" else groups):
                for row, sentence in zip(entry["pairs"], entry["sentences"], strict=True):
                    tables["system_pairs"].append({"dimension": dim, "weighting": weighting, "group_by": by, "group": value, **row, "sentence": sentence})
                for row in entry["strengths"]:
                    tables["system_strengths"].append({"dimension": dim, "weighting": weighting, "group_by": by, "group": value, **row})


def table_csv(rows: list[dict]) -> str:
    return csv_text(rows)
