"""Small shared pieces of the annotation tests: a listened-to judgment, a full set of study parameters."""

from __future__ import annotations

from datetime import timedelta

from annotation import services
from tests.listening import listen


def submit(assignment, user, key):
    listen(assignment, seconds=3.0)
    return services.judgment_submit(
        assignment_id=assignment.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="B", musicality_confidence=3,
        idempotency_key=key, now=assignment.served_at + timedelta(seconds=20),
    )


PARAMETERS = {
    "title": "Vocals study",
    "instructions": "Listen to both clips.",
    "overlap_target": 4,
    "overlap_share": 0.5,
    "min_listen_seconds": 6.5,
    "rationale_min_length": 15,
    "lock_ttl_seconds": 300,
    "gold_rate": 0.1,
    "annotator_target": 25,
    "selection": "uncertainty",
    "active_share": 0.3,
    "licence": "CC BY 4.0",
    "is_active": False,
    "screening": "huggins",
    "screening_trials": 8,
    "screening_pass": 7,
    "screening_retries": 2,
    "screening_existing_members": True,
    "loudness_match": False,
    "loudness_target_lufs": -20.0,
    "dimension_passes": "separate",
}
