"""Server-drawn charts for benchmark pages: plain SVG geometry for templates (no script, no inline styles, so the CSP holds)."""

from __future__ import annotations

import math

# Plot area inside a 120 x 120 viewBox: room on the left and bottom for the axis labels.
LEFT, TOP, SIZE = 22.0, 6.0, 90.0


def _x(p: float) -> float:
    return round(LEFT + SIZE * p, 2)


def _y(p: float) -> float:
    return round(TOP + SIZE * (1.0 - p), 2)


def reliability_plot(calibration: dict | None) -> dict | None:
    """Points of a reliability diagram (mean stated P(A) per bin against the share of A), area by items.

    Returns None without calibration; else the frame, the diagonal of perfect calibration, ticks,
    a polyline through the bins and one circle per bin with its caption.
    """
    if not calibration or not calibration.get("bins"):
        return None
    bins = calibration["bins"]
    biggest = max(b["n"] for b in bins)
    points = []
    for b in bins:
        points.append(
            {
                "cx": _x(b["mean_prob"]),
                "cy": _y(b["share_a"]),
                "r": round(1.2 + 2.8 * math.sqrt(b["n"] / biggest), 2),
                "title": f"P(A) {b['low']:.1f}–{b['high']:.1f}: {b['n']} items, mean stated {b['mean_prob']:.2f}, share A {b['share_a']:.2f}",
            }
        )
    ticks = [{"value": f"{v:g}", "x": _x(v), "y": _y(v)} for v in (0.0, 0.5, 1.0)]
    return {
        "frame": {"x": LEFT, "y": TOP, "size": SIZE},
        # Where the tick labels sit: under the x axis, left of the y axis.
        "tick_row": TOP + SIZE + 7,
        "tick_column": LEFT - 2,
        "diagonal": {"x1": _x(0.0), "y1": _y(0.0), "x2": _x(1.0), "y2": _y(1.0)},
        "line": " ".join(f"{p['cx']},{p['cy']}" for p in points),
        "points": points,
        "ticks": ticks,
        "label_x": {"x": LEFT + SIZE / 2, "y": TOP + SIZE + 16},
        "label_y": {"x": 5, "y": TOP + SIZE / 2},
        "brier": calibration["brier"],
        "n": calibration["n"],
    }
