"""Writes for the annotation app, one module per concern; this package exports their public functions.

- audio.py: probing audio files, storing clips (content-addressed), systems
- pairs.py: conditions and pairs
- studies.py: creating a study and changing its parameters
- people.py: annotator profiles, study membership, consent
- assignment.py: the assignment engine (next pair, locks, skips)
- listening.py: the server's listening record (audio bytes sent, events received)
- priorities.py: active selection's rankings (written by whoever computes them) and the ranked candidates
- judgments.py: judgment submission, checked against that record
- passes.py: a pair's two dimensions answered on separate screens, one judgment in the end
- screening.py, practice.py, recruitment.py: the headphone screen, the practice round, recruitment links
- gate.py: the one gate before the work (screen, then practice, then the questionnaire), for pages, APIs and tasks alike
- questionnaires.py: questionnaire versions and answers

Every function takes keyword-only arguments and runs in a transaction where it writes
more than one row; refusals raise `common.errors.ServiceError`.
"""

from .assignment import assignment_next, assignment_skip, planner_stats_refresh
from .audio import SUPPORTED_AUDIO, AudioError, AudioInfo, LoudnessBackfill, audio_probe, clip_ingest, clip_ingest_array, clip_loudness_backfill, file_sha256, system_get_or_create
from .gate import crowd_gate_check, crowd_step, questionnaire_gate_check, screening_pending
from .judgments import LOG_FIELDS, judgment_listeners, judgment_submit, listening_log_clean
from .listening import audio_fetch_record, listening_events_record
from .pairs import condition_content_key, condition_get_or_create, pair_get_or_create, pair_overlap_for
from .passes import dimension_answer_submit, passes_state
from .people import CONSENT_VERSION, consent_give, consent_listeners, consent_withdraw, profile_ensure, study_annotator_add, study_annotators_add
from .practice import practice_add, practice_answer, practice_from_gold, practice_next, practice_receipts_check, practice_remove, practice_servable
from .priorities import pair_priorities_replace
from .questionnaires import questionnaire_answer, questionnaire_save
from .recruitment import (
    SIGNATURE_PARAM,
    participant_signature,
    recruitment_claim_of,
    recruitment_enter,
    recruitment_entry_key,
    recruitment_finish,
    recruitment_link_close,
    recruitment_link_create,
    recruitment_link_for,
    recruitment_link_resume,
    recruitment_participant_known,
    recruitment_resume_matches,
    recruitment_work_complete,
    resume_code_display,
)
from .screening import screening_answer, screening_attempt_for, screening_attempt_open, screening_receipts_missing, screening_status
from .studies import STUDY_PARAMETERS, study_collaborators_set, study_create, study_update

__all__ = [
    "dimension_answer_submit",
    "passes_state",
    "crowd_gate_check",
    "questionnaire_gate_check",
    "crowd_step",
    "screening_pending",
    "questionnaire_answer",
    "questionnaire_save",
    "practice_add",
    "practice_answer",
    "practice_from_gold",
    "practice_next",
    "practice_receipts_check",
    "practice_remove",
    "practice_servable",
    "SIGNATURE_PARAM",
    "participant_signature",
    "recruitment_claim_of",
    "recruitment_enter",
    "recruitment_entry_key",
    "recruitment_finish",
    "recruitment_link_close",
    "recruitment_link_create",
    "recruitment_link_for",
    "recruitment_link_resume",
    "recruitment_participant_known",
    "recruitment_resume_matches",
    "recruitment_work_complete",
    "resume_code_display",
    "screening_answer",
    "screening_attempt_for",
    "screening_attempt_open",
    "screening_receipts_missing",
    "screening_status",
    "CONSENT_VERSION",
    "LOG_FIELDS",
    "STUDY_PARAMETERS",
    "SUPPORTED_AUDIO",
    "AudioError",
    "AudioInfo",
    "LoudnessBackfill",
    "assignment_next",
    "assignment_skip",
    "audio_fetch_record",
    "audio_probe",
    "clip_ingest",
    "clip_ingest_array",
    "clip_loudness_backfill",
    "condition_content_key",
    "condition_get_or_create",
    "consent_give",
    "consent_listeners",
    "consent_withdraw",
    "file_sha256",
    "judgment_listeners",
    "judgment_submit",
    "listening_events_record",
    "listening_log_clean",
    "pair_get_or_create",
    "pair_overlap_for",
    "pair_priorities_replace",
    "planner_stats_refresh",
    "profile_ensure",
    "study_annotator_add",
    "study_annotators_add",
    "study_create",
    "study_update",
    "study_collaborators_set",
    "system_get_or_create",
]
