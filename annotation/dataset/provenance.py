"""The export's provenance columns: how each pair's label was settled on each dimension, and by whom and when
where an adjudicator decided it (annotation/adjudication_selectors.py). They come after every other key, so tools
that read the CMI-Pref keys see those unchanged."""

from __future__ import annotations

from ..adjudication_selectors import DIMENSIONS, UNRESOLVED, in_row_terms, provenance_columns

PROVENANCE_KEYS = (
    *(f"provenance-{dim}" for dim in DIMENSIONS),
    *(f"adjudicated-{dim}" for dim in DIMENSIONS),
    "adjudicated_by",
    "adjudicated_at",
)
PROVENANCE_HELP = (
    "`provenance-<dimension>`: how the pair's label was settled, from its exported votes: `unanimous` (every vote gives the "
    "same answer, one vote included), `majority` (more than half do), `adjudicated` (an adjudicator decided it) or "
    "`unresolved` (no answer has more than half, or no vote). `adjudicated-<dimension>`: the adjudicator's answer in this "
    "row's terms (model_a, model_b or tie), `adjudicated_by` their pseudonymous id and `adjudicated_at` the time (UTC); "
    "null where no one adjudicated the pair."
)


def provenance_for(judgments) -> dict[int, dict]:
    """Pair id -> its provenance values (adjudicated answers in the pair's stored order)."""
    return provenance_columns(judgments)


def provenance_row(values: dict | None, *, shown_a_is_clip_a: bool) -> dict:
    """One row's PROVENANCE_KEYS: the pair's values with the adjudicated answers put in the row's terms."""
    if values is None:
        return {**dict.fromkeys(PROVENANCE_KEYS), **{f"provenance-{dim}": UNRESOLVED for dim in DIMENSIONS}}
    return {**values, **{f"adjudicated-{dim}": in_row_terms(values[f"adjudicated-{dim}"], shown_a_is_clip_a=shown_a_is_clip_a) for dim in DIMENSIONS}}
