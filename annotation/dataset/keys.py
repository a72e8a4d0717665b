"""The CMI-RewardBench / CMI-Pref JSONL format as import and export share it: keys, labels, folders, the request error."""

from __future__ import annotations

import re

from auditorium.errors import ServiceError

DEFAULT_STUDY = "cmi-pref"
EXPORT_SOURCE = "cmi-arena-annotation"
# The public files' key order; exports keep it so a diff against them is readable.
EXPORT_KEYS = (
    "audio-path",
    "audio2",
    "ref-audio-path",
    "prompt",
    "lyrics",
    "model_a",
    "model_b",
    "prompt id",
    "user id",
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
    "feedback",
    "source",
    "split",
    "modality",
)
REQUIRED_KEYS = ("audio-path", "audio2", "model_a", "model_b", "split")
VOTE_KEYS = (
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
)
PREFERENCE_LABELS = {"model_a": "a", "a": "a", "model_b": "b", "b": "b"}
GENERATED_DIR = "gen-audio"
REFERENCE_DIR = "ref-audio"
# A Windows drive prefix ("C:"): an absolute path, whatever the separators.
WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


class DatasetError(ServiceError):
    """A problem with the whole request (missing file, bad archive), not with one row."""

